"""The run's verdict, computed once (vbench/analysis/verdict.py says what it holds).

:func:`verdict_of` asks the run's schedule, then its workload driver, for the study's
answer (their ``answer`` hooks; the headline at the best point when neither answers),
adds what the run created and removed in vSphere (its journal) and builds the
:class:`Verdict`. The run's finish step stores it as ``verdict.json`` in the run
directory; :func:`with_verdict` (a command that has read the run) and
:func:`ensure_verdict` (one that has its id) give the stored verdict, or compute it for a
run stored without one (an older version, a run killed before its end) or whose status has
changed since (``vbench cleanup`` settled it), and store it unless the run is under way."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vbench.analysis.verdict import (
    VERDICT_FILE,
    Answer,
    Effects,
    Verdict,
    read_stored,
    verdict_to_json,
)
from vbench.analysis.verdict_build import AnswerInputs, build_verdict, simulated_text
from vbench.report.data import ReportData
from vbench.vsphere.journal import FINAL, JOURNAL_FILE, items, parse_lines

if TYPE_CHECKING:
    from vbench.engine.finish import RunResult
    from vbench.results.rundir import RunDir
    from vbench.results.store import Store
    from vbench.vsphere.cleanup import CleanupReport

# What the journal's kinds are called in a sentence (other kinds print as they are).
KIND_NAMES = {
    "vm": "VM", "snapshot": "snapshot", "cl_library": "library", "cl_item": "library item",
    "cl_session": "transfer session", "cl_vm": "deployed VM",
}  # fmt: skip


def answer_inputs(data: ReportData) -> AnswerInputs:
    return AnswerInputs(
        run=data.run, points=data.points, trials=data.trials, analysis=data.analyzed(),
        headline=tuple(data.headline_metrics), simulated=simulated_text(data.run) is not None,
    )


def answers_for(inputs: AnswerInputs) -> tuple[tuple[Answer, ...], list[str]]:
    """The schedule's answers, then the driver's; and why a driver gave none (a driver
    of another installation, or one whose hook failed on this run)."""
    # Imported here: `vbench show` reads stored verdicts without the engine's planning.
    from vbench.engine.schedule import schedule_class

    scenario = inputs.run.get("scenario") or {}
    out: list[Answer] = []
    if scenario.get("workloads"):  # several workloads in one trial: passing tiles lead
        from vbench.analysis.tiles import tiles_answer

        out.extend(tiles_answer(inputs))
    out.extend(schedule_class(scenario).answer(inputs))
    problems: list[str] = []
    name = (scenario.get("workload") or {}).get("driver")
    if name:
        from vbench.errors import VbenchError
        from vbench.workloads.base import get_driver

        try:
            driver = get_driver(str(name))
        except VbenchError as exc:
            problems.append(f"driver {name} not installed here, its answer is not shown: {exc}")
        else:
            try:
                out.extend(driver.answer(inputs))
            except Exception as exc:  # a plugin's bug must not hide the run's figures
                problems.append(f"the {name} driver's answer failed: {exc!r}")
    return tuple(out), problems


def effects_of(run_dir: str | Path | None) -> Effects | None:
    """What the run created in vSphere and removed, from its journal (None: no journal,
    the run reached no vCenter)."""
    if not run_dir:
        return None
    path = Path(run_dir) / JOURNAL_FILE
    try:
        entries = parse_lines(path.read_text(encoding="utf-8").splitlines())
    except OSError:
        return None
    created: Counter[str] = Counter()
    removed: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    action: dict[tuple[str, str, str], str] = {}  # the last intent's action, per object
    for e in entries:
        kind = KIND_NAMES.get(str(e.get("kind") or "vm"), str(e.get("kind")))
        event = e.get("event")
        key = (str(e.get("vcenter")), kind, str(e.get("name")))
        if event == "intent":
            action[key] = str(e.get("action") or "")
        elif event == "created" and action.get(key) != "register":
            # A VM registered back (vcbench's unregister/register) existed already.
            created[kind] += 1
        elif event in ("destroyed", "missing"):
            removed[kind] += 1
        elif event == "kept":
            kept[kind] += 1
    left: Counter[str] = Counter(
        KIND_NAMES.get(i.kind, i.kind) for i in items(entries)
        if i.state not in FINAL and (i.moid is not None or i.state in ("started", "created"))
    )
    return Effects(dict(created), dict(removed), dict(kept), dict(left))


def verdict_of(data: ReportData, *, exit_code: int | None = None,
               exit_reason: str = "") -> Verdict:
    """The verdict of a stored run (see the module docstring)."""
    inputs = answer_inputs(data)
    answers, problems = answers_for(inputs)
    return build_verdict(
        inputs, answers, exit_code=exit_code, exit_reason=exit_reason,
        warnings=[*data.warnings, *problems], effects=effects_of(data.run.get("run_dir")),
    )


def store_verdict(run_dir: str | Path, verdict: Verdict) -> Path:
    """``verdict.json`` written whole or not at all: a temporary file of its own in the
    same directory (two commands storing at once never share one), then renamed."""
    path = Path(run_dir) / VERDICT_FILE
    text = json.dumps(verdict_to_json(verdict), indent=2, default=str)
    fd, tmp = tempfile.mkstemp(prefix=".verdict-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


UNDER_WAY = ("provisioning", "running")  # the store's UNFINISHED_STATUSES (not imported:
# `vbench show` of a stored verdict reads no database module for it)


def with_verdict(data: ReportData) -> ReportData:
    """``data`` with its run's verdict, as :func:`ensure_verdict` gives it, for a command
    that has read the run already (the stored verdict when current, else computed now
    and stored)."""
    if data.verdict is not None:
        return data
    run_dir = data.run.get("run_dir")
    verdict = read_stored(run_dir, str(data.run.get("status")))
    if verdict is None:
        verdict = verdict_of(data)
        # A run under way has no verdict to keep: its figures and exit code will change.
        finished = str(data.run.get("status")) not in UNDER_WAY
        if finished and run_dir and Path(run_dir).is_dir():
            with contextlib.suppress(OSError):  # a read-only copy of a run
                store_verdict(run_dir, verdict)
    return dataclasses.replace(data, verdict=verdict)


def ensure_verdict(store: Store, run_id: str) -> Verdict:
    """The verdict of a stored run: its ``verdict.json`` when current, else computed now
    (with the schedule's and driver's answers) and stored in its run directory, so that
    every later output of the run reads the same one without computing it again."""
    from vbench.report.build import report_data

    row = store.get_run(run_id)  # the record alone, when the verdict is stored
    found = read_stored(row.run_dir, row.status)
    if found is not None:
        return found
    return with_verdict(report_data(store, row.run_id)).verdicted()


# ----------------------------------------------------------- the run's finish steps
# Two steps of vbench/engine/finish.py's FINISH_STEPS: the verdict is computed once,
# before the QoS and regression verdicts (which read the QoS as the study reads it), and
# stored with the exit code those lead to.


def decide(store: Store, result: RunResult) -> RunResult:
    """The run's verdict, attached to its report data (every output renders it)."""
    verdict = verdict_of(result.data, exit_code=result.exit_code)
    return dataclasses.replace(result, data=dataclasses.replace(result.data, verdict=verdict))


def keep_verdict(store: Store, result: RunResult) -> RunResult:
    """The verdict with the exit code the QoS and regression verdicts lead to, stored as
    ``verdict.json`` in the run directory."""
    reason = result.verdicts.reason if result.verdicts is not None else ""
    verdict = dataclasses.replace(result.data.verdicted(), exit_code=result.exit_code,
                                  exit_reason=reason)
    try:
        store_verdict(result.run_dir, verdict)
    except OSError as exc:  # the store holds the run: `vbench show` computes it again
        result.rundir.log("verdict_not_written", level="warning", error=str(exc))
    return dataclasses.replace(result, data=dataclasses.replace(result.data, verdict=verdict))


def cleanup_text(report: CleanupReport, rundir: RunDir | None) -> str:
    """The run's last word on vSphere: what it created and removed over the run (the
    journal), then what the final clean-up did — not only the final clean-up's count,
    which is 0 when the workload removed its own objects as it went."""
    effects = effects_of(rundir.path) if rundir is not None else None
    final = f"final clean-up {report.summary()}"
    if effects is None:
        return f"vSphere cleanup: {report.summary()}"
    return f"vSphere: {effects.text()} ({final})"


# A run stored without verdict.json costs a full read and analysis to answer: `history`
# does that for this many runs at most (the newest), so that it stays one query for the
# rest (docs/performance.md: its target is 2 s over 200 runs).
COMPUTE_AT_MOST = 20


def verdicts_of(store: Store, run_ids: Sequence[str],
                compute_at_most: int = COMPUTE_AT_MOST) -> dict[str, Verdict | None]:
    """The verdicts of several runs (``run_ids`` oldest first): stored ones as they are,
    missing ones computed (and stored) for the newest ``compute_at_most``, else None."""
    out: dict[str, Verdict | None] = {}
    budget = compute_at_most
    rows = store.runs_of(list(run_ids))  # one query, not one per run
    for run_id in reversed(list(run_ids)):
        row = rows.get(run_id) or store.get_run(run_id)
        found = read_stored(row.run_dir, row.status)
        if found is None and budget > 0:
            budget -= 1
            found = ensure_verdict(store, run_id)
        out[run_id] = found
    return out
