"""The ``content_library`` workload driver: Content Library operations timed through the
vSphere REST API (create, publish, subscribe, sync, import, export, deploy, capture).

No guests: the driver works in the point's vCenter (``ctx.vsphere``; a factor level's
lab profile may switch vCenter, datastore or label the network set-up) and, for a
cross-vCenter subscription, in another vCenter of the lab named by a step. Per trial:
prepare checks the vCenters answer; run executes the steps in order inside the steady
window (the steps, not ``phases.steady``, decide how long it lasts); collect writes
``ops.csv`` (every operation) and turns it into figures; teardown removes everything the
trial created, newest first.

Figures per step, named by the step's label (default: its op): ``<step>_time`` mean
per-operation completion time (s), ``<step>_time_max``, ``<step>_batch_time`` (first
start to last end, s), ``<step>_ops``; for transfers ``<step>_bytes`` and
``<step>_throughput`` (MB/s = bytes moved / batch wall time) and ``<step>_overhead``
(transfer complete -> operation recorded, ms); for sync ``<step>_items``.
User documentation: ``docs/content-library.md``.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from vbench.analysis.catalogue import Metric, metric, same_unit
from vbench.errors import LabError
from vbench.workloads.base import (
    Finding,
    LabObject,
    PlannedCommand,
    TrialContext,
    Workload,
    register,
)
from vbench.workloads.content_library import destroyers as _destroyers  # noqa: F401 (registers)
from vbench.workloads.content_library.params import (
    ContentLibraryParams,
    findings,
    lab_objects,
)

if TYPE_CHECKING:
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs
    from vbench.results.records import Sample
    from vbench.workloads.content_library.ops import Batch, OpRecord, TrialRun

SOURCE = "content_library"
OPS_FILE = "ops.csv"
TRANSFERS = ("import", "export")


@register
class ContentLibraryWorkload(Workload):
    """Content Library operations on one or two vCenters, N at a time."""

    name: ClassVar[str] = "content_library"
    docs: ClassVar[tuple[str, ...]] = ("docs/content-library.md",)
    Params: ClassVar[type[ContentLibraryParams]] = ContentLibraryParams
    roles: ClassVar[tuple[str, ...]] = ()
    needs_vcenter: ClassVar[bool] = True
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "export_throughput", "import_throughput", "sync_time", "deploy_time",
        "export_time", "import_time",
    )  # fmt: skip

    @classmethod
    def metric_catalogue(cls, params: ContentLibraryParams) -> tuple[Metric, ...]:  # type: ignore[override]
        """``<step>_<figure>`` for the steps of these parameters (see batch_samples)."""
        step = tuple(s.name for s in params.steps)
        return (
            *same_unit(("<step>_time", "<step>_time_max", "<step>_batch_time"), "s", "lower",
                       step=step),
            # How many operations, bytes and items a step did is set by the scenario.
            metric("<step>_ops", "ops", "none", step=step),
            metric("<step>_bytes", "B", "none", step=step),
            metric("<step>_throughput", "MB/s", "higher", step=step),
            metric("<step>_overhead", "ms", "lower", step=step),
            metric("<step>_items", "items", "none", step=step),
        )  # fmt: skip

    def __init__(self, params: ContentLibraryParams) -> None:  # type: ignore[override]
        super().__init__(params)
        self.p: ContentLibraryParams = params
        self._run: TrialRun | None = None

    @classmethod
    def vcenters(cls, params: ContentLibraryParams) -> tuple[str, ...]:  # type: ignore[override]
        """The vCenters steps name (a subscriber elsewhere): in the run's testbed too."""
        named = [s.vcenter for s in params.steps if s.vcenter]
        if params.subscriber_vcenter and any(s.op == "subscribe" and not s.vcenter
                                             for s in params.steps):
            named.append(params.subscriber_vcenter)
        return tuple(dict.fromkeys(named))

    @classmethod
    def lab_objects(cls, params: ContentLibraryParams) -> tuple[LabObject, ...]:  # type: ignore[override]
        """Datastores, existing libraries and items, captured VMs, deploy targets."""
        return lab_objects(params)

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """Each step's time per operation with the honesty check (see :mod:`.answer`)."""
        from vbench.workloads.content_library.answer import library_answer

        return library_answer(inputs)

    @classmethod
    def findings(cls, params: ContentLibraryParams) -> list[Finding]:  # type: ignore[override]
        return findings(params)

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        out = []
        for s in self.p.steps:
            what = [s.op, f"library={s.library}"]
            if s.op in ("import", "export", "deploy"):
                what.append(f"concurrency={self.p.concurrency_of(s)}")
            if s.op == "import":
                src = s.url or (",".join(s.files) if s.files else f"generated {self.p.size(s)} B")
                what += [f"items={self.p.count(s)}", f"source={src}"]
            if s.op == "subscribe":
                what += [f"publisher={s.publisher}", "on_demand" if s.on_demand else "immediate"]
            if s.op in ("deploy", "sync", "export") and s.item:
                what.append(f"item={s.item}")
            if s.op == "deploy":
                what += [f"count={s.count or 1}"] + (["powered_on"] if s.powered_on else [])
            if s.op == "capture":
                what.append(f"vm={s.vm}")
            if s.vcenter:
                what.append(f"vcenter={s.vcenter}")
            out.append(PlannedCommand("vcenter", "run", tuple(what)))
        return out

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        moved = sum(self.p.count(s) * self.p.size(s) for s in self.p.steps if s.op == "import")
        return warmup + cooldown + 5.0 + 2 * moved / 100e6  # ~100 MB/s each way (a guess)

    # ------------------------------------------------------------------ trial
    def prepare(self, ctx: TrialContext) -> None:
        from vbench.workloads.content_library.ops import TrialRun

        self._run = TrialRun(ctx, self.p)
        for vc in dict.fromkeys(self._run.vc(s) for s in self.p.steps):
            self._run.session(vc)  # a wrong password or an unreachable vCenter fails here

    def run(self, ctx: TrialContext) -> None:
        t = self._run
        if t is None:
            raise LabError("content_library", "prepare did not finish")
        ctx.mark("warmup_start")
        ctx.mark("steady_start")
        for i, step in enumerate(self.p.steps):
            t.run_step(i, step)
        ctx.mark("steady_end")

    def collect(self, ctx: TrialContext) -> list[Sample]:
        t = self._run
        if t is None:
            return []
        ctx.raw_dir.mkdir(parents=True, exist_ok=True)
        write_ops(ctx.raw_dir / OPS_FILE, t.batches, t.unfinished)
        (ctx.raw_dir / "libraries.json").write_text(
            json.dumps({k: {"id": v.id, "name": v.name, "vcenter": v.vcenter,
                            "subscribed": v.subscribed, "items": len(v.items)}
                        for k, v in t.libs.items()}, indent=1),
            encoding="utf-8",
        )  # fmt: skip
        return [s for b in t.batches for s in batch_samples(b)]

    def teardown(self, ctx: TrialContext) -> None:
        t, self._run = self._run, None
        if t is None:
            return
        try:
            errors = t.remove_created()
        finally:
            t.close()
        if errors:
            raise LabError("content_library teardown", "; ".join(errors[:5]))


def write_ops(path: object, batches: list[Batch], unfinished: Sequence[OpRecord] = ()) -> None:
    """Every operation; ``step_ok`` 0 for those that finished in a step that failed (kept,
    though no figure is made of a step that did not finish)."""
    with open(path, "w", newline="", encoding="utf-8") as f:  # type: ignore[call-overload]
        w = csv.writer(f)
        w.writerow(["step", "op", "index", "start", "end", "seconds", "bytes", "overhead_ms",
                    "step_ok"])  # fmt: skip
        rows = [(r, 1) for b in batches for r in b.records] + [(r, 0) for r in unfinished]
        for r, ok in rows:
            ovh = "" if r.overhead is None else f"{r.overhead * 1e3:.3f}"
            w.writerow([r.step, r.op, r.index, f"{r.start:.6f}", f"{r.end:.6f}",
                        f"{r.seconds:.6f}", r.bytes, ovh, ok])  # fmt: skip


def batch_samples(b: Batch) -> list[Sample]:
    """The figures of one step, named ``<step>_<figure>`` (pure: unit-tested)."""
    from vbench.results.records import Sample

    times = [r.seconds for r in b.records]
    wall = b.end - b.start

    def fig(name: str, value: float | None, unit: str) -> Sample:
        return Sample(f"{b.step}_{name}", value, unit, SOURCE)

    out = [
        fig("time", statistics.fmean(times), "s"),
        fig("time_max", max(times), "s"),
        fig("batch_time", wall, "s"),
        fig("ops", float(len(times)), "ops"),
    ]
    if b.op in TRANSFERS:
        from vbench.workloads.content_library.ops import known_sum

        moved = known_sum(r.bytes for r in b.records)
        out.append(fig("bytes", None if moved is None else float(moved), "B"))
        rate = moved / 1e6 / wall if moved is not None and wall > 0 else None
        out.append(fig("throughput", rate, "MB/s"))
        ovh = [r.overhead for r in b.records if r.overhead is not None]
        if ovh:
            out.append(fig("overhead", statistics.median(ovh) * 1e3, "ms"))
    for name, value, unit in b.extra:
        out.append(fig(name, value, unit))
    return out
