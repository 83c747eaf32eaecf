"""Content Library's answer: each step's time per operation, with an honesty check.

A time means what it seems only when the operation did what it names. On a simulated
vCenter (vcsim) a subscriber shares its publisher's items, so a sync copies no data
(25 MB "synced" in 1.2 ms), and a deploy or capture clones no disk; only import and
export move bytes (over loopback, to the simulator's own files). On any lab, a transfer
implying more than ``MAX_RATE`` is no transfer either (content already there, or on
demand). The answer says so beside each such figure, never silently."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vbench.analysis.answer_kit import mean_at
from vbench.analysis.verdict import Answer, Fact
from vbench.analysis.verdict_build import AnswerInputs

MAX_RATE = 10e9  # bytes/s: faster than a 100 GbE link can carry (12.5 GB/s raw)
SIM_NOTES = {
    "sync": "vcsim shares the publisher's items with the subscriber: no data is copied",
    "deploy": "vcsim clones no disk data",
    "capture": "vcsim copies no disk data",
}
HOW_TO_READ = (
    "Each step's mean time per operation over the point's trials (and, for import and "
    "export, MB/s over the step's wall time). A figure marked * did not move the data its "
    "name suggests: the note beside it says why; do not read it as a transfer time."
)


def library_answer(inputs: AnswerInputs) -> tuple[Answer, ...]:
    steps = _steps(inputs.stored.scenario.params)
    points = sorted({p for s, _ in steps for p in inputs.points_with(f"{s}_time")})
    if not points:
        return ()
    notes: dict[str, str] = {}
    lines = {p: _point_line(inputs, p, steps, notes) for p in points}
    first = points[0]
    where = f" at {inputs.point_title(first)}" if len(points) > 1 else ""
    text = f"time per operation{where}: {lines[first]}"
    marked = [f"* {s}: {n}" for s, n in notes.items()]
    if marked:
        text += " — " + "; ".join(marked)
    if inputs.simulated:  # the lab's simulator, or vcsim's product name in its testbed
        text += " (simulated vCenter)"
    facts = tuple(Fact(f"{s} time", _secs(mean_at(inputs, first, f"{s}_time")),
                       mean_at(inputs, first, f"{s}_time"), "s") for s, _ in steps
                  if mean_at(inputs, first, f"{s}_time") is not None)
    details = tuple(f"{inputs.point_title(p)}: {lines[p]}" for p in points[1:])
    figures = tuple(inputs.figure(first, m) for m in inputs.headline
                    if m in inputs.analysis.figures.units)
    return (Answer("content library", "Content Library operations", text, facts=facts,
                   figures=figures, details=details, how_to_read=HOW_TO_READ,
                   ok=None if not marked else False),)


def _steps(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(step name, op) of the scenario's steps, in order, once each."""
    out: dict[str, str] = {}
    for raw in params.get("steps") or ():
        if isinstance(raw, Mapping) and raw.get("op"):
            out.setdefault(str(raw.get("label") or raw["op"]), str(raw["op"]))
    return list(out.items())


def _point_line(inputs: AnswerInputs, point: int, steps: Sequence[tuple[str, str]],
                notes: dict[str, str]) -> str:
    """``import 0.21 s (38 MB/s) · sync 1.2 ms*`` at ``point``; notes of marked steps."""
    parts = []
    for step, op in steps:
        t = mean_at(inputs, point, f"{step}_time")
        if t is None:
            continue
        text = f"{step} {_secs(t)}"
        rate = mean_at(inputs, point, f"{step}_throughput")
        if rate is not None:
            text += f" ({rate:.3g} MB/s)"
        why = _why_not_a_transfer(inputs, point, step, op, t)
        if why:
            notes.setdefault(step, why)
            text += "*"
        parts.append(text)
    return " · ".join(parts)


def _why_not_a_transfer(inputs: AnswerInputs, point: int, step: str, op: str,
                        seconds: float) -> str | None:
    moved = _bytes(inputs, point, step, op)
    implied = moved / seconds if moved and seconds > 0 else None
    if op in SIM_NOTES and inputs.simulated:
        size = f" ({_mb(moved)} in {_secs(seconds)})" if moved else ""
        return SIM_NOTES[op] + size
    if implied is not None and implied > MAX_RATE:
        return (f"{_mb(moved)} in {_secs(seconds)} implies {implied / 1e9:.3g} GB/s, faster "
                "than any link: the content was not copied in this step")
    return None


def _bytes(inputs: AnswerInputs, point: int, step: str, op: str) -> float | None:
    """Bytes the step's operation is about: a transfer's own figure; for a sync, its
    items times the mean size of the items imported at the point (≈)."""
    if op in ("import", "export"):
        total, ops = (mean_at(inputs, point, f"{step}_{k}") for k in ("bytes", "ops"))
        return total / ops if total and ops else None
    if op != "sync":
        return None
    items = mean_at(inputs, point, f"{step}_items")
    transfers = [m[: -len("_bytes")] for m in inputs.analysis.figures.units
               if m.endswith("_bytes")]
    sizes = [(mean_at(inputs, point, f"{s}_bytes"), mean_at(inputs, point, f"{s}_ops"))
             for s in transfers]
    total = sum(b for b, n in sizes if b and n)
    count = sum(n for b, n in sizes if b and n)
    return items * total / count if items and count else None


def _secs(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def _mb(x: float | None) -> str:
    return "—" if x is None else f"{x / 1e6:.3g} MB"
