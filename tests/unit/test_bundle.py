"""The bundle (vbench/engine/bundle.py) as pure code: two small in-process workloads
stand for drivers, so each rule of the shared phases can be driven exactly — the
trial's steady window is the one both share, a failing member keeps the other's
figures, a failing teardown is logged without failing the trial."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from vbench.config.tiles import Instance
from vbench.engine.bundle import Bundle, BundleParams, Member
from vbench.errors import GuestError, VbenchError
from vbench.results.records import Sample
from vbench.workloads.base import Params, PlannedCommand, TrialContext, Workload


class _P(Params):
    fail_in: str = ""  # the step that raises: run | collect | teardown
    value: float = 1.0
    window_start: float = 0.0  # when set: the tool's own steady window starts then


class _Tool(Workload):
    """Marks its phases in order; ``go`` lets a test decide when steady starts."""

    name: ClassVar[str] = "tool"
    Params: ClassVar[type[Params]] = _P
    go: threading.Event

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        return []

    def _maybe_fail(self, step: str) -> None:
        if self.params.fail_in == step:  # type: ignore[attr-defined]
            raise GuestError("g", f"{step} broke")

    def run(self, ctx: TrialContext) -> None:
        ctx.mark("warmup_start")
        self._maybe_fail("run")
        self.go.wait(10)
        ctx.mark("steady_start")
        start = self.params.window_start  # type: ignore[attr-defined]
        if start:
            ctx.workload_window(start, start + 10.0)
        ctx.mark("steady_end")

    def collect(self, ctx: TrialContext) -> list[Sample]:
        self._maybe_fail("collect")
        return [Sample("ops", self.params.value, "ops/s", "tool")]  # type: ignore[attr-defined]

    def teardown(self, ctx: TrialContext) -> None:
        self._maybe_fail("teardown")


def _bundle(tmp_path: Path, *specs: tuple[str, dict[str, Any]], tile: int | None = None
            ) -> tuple[Bundle, TrialContext, list[str], list[dict[str, Any]], threading.Event]:
    go = threading.Event()
    members = []
    for name, params in specs:
        tool = _Tool(_P(**params))
        tool.go = go
        members.append(Member(Instance(name, tile), _Tool, tool, {}))
    marks: list[str] = []
    events: list[dict[str, Any]] = []
    ctx = TrialContext(
        run_id="r", point=0, trial=1, labels={}, warmup=0.0, steady=1.0, cooldown=0.0,
        guests={}, raw_dir=tmp_path, cancel=threading.Event(), mark=marks.append,
        log=lambda event, **f: events.append({"event": event, **f}))
    return Bundle(BundleParams(tuple(members))), ctx, marks, events, go


def test_the_trial_steady_phase_starts_when_every_member_is_in_its_own(tmp_path: Path
                                                                        ) -> None:
    bundle, ctx, marks, events, go = _bundle(tmp_path, ("a", {}), ("b", {"value": 2.0}))
    bundle.prepare(ctx)
    runner = threading.Thread(target=bundle.run, args=(ctx,))
    runner.start()
    # Both members are in warm-up, held there: the trial's warm-up began, its steady
    # phase did not.
    for _ in range(1000):
        if sum(e.get("mark") == "warmup_start" for e in events) == 2:
            break
        threading.Event().wait(0.01)
    assert marks == ["warmup_start"]
    go.set()
    runner.join(10)
    assert marks == ["warmup_start", "steady_start", "steady_end"]
    samples = {s.metric: s.value for s in bundle.collect(ctx)}
    assert samples["a.ops"] == 1.0 and samples["b.ops"] == 2.0
    assert samples["a.ok"] == samples["b.ok"] == 1.0
    assert samples["start_spread"] is not None and samples["start_spread"] >= 0


@pytest.mark.parametrize("step", ["run", "collect"])
def test_a_failing_member_keeps_the_others_figures(tmp_path: Path, step: str) -> None:
    bundle, ctx, marks, events, go = _bundle(tmp_path, ("a", {}), ("b", {"fail_in": step}))
    go.set()
    bundle.prepare(ctx)
    bundle.run(ctx)
    samples = {s.metric: s.value for s in bundle.collect(ctx)}
    bundle.teardown(ctx)
    assert samples == {"a.ops": 1.0, "a.ok": 1.0, "b.ok": 0.0, "start_spread": 0.0} \
        if step == "run" else samples["b.ok"] == 0.0 and "b.ops" not in samples
    failed = [e for e in events if e["event"] == "workload_failed"]
    assert [(e["workload"], e["step"]) for e in failed] == [("b", step)]
    assert "steady_start" in marks  # a failed member does not hold the others' window


def test_every_member_failing_fails_the_trial(tmp_path: Path) -> None:
    bundle, ctx, _marks, _events, go = _bundle(tmp_path, ("a", {"fail_in": "run"}),
                                               ("b", {"fail_in": "run"}))
    go.set()
    bundle.prepare(ctx)
    with pytest.raises(VbenchError, match="every workload of the trial failed"):
        bundle.run(ctx)


def test_a_failing_teardown_is_logged_and_the_trial_goes_on(tmp_path: Path) -> None:
    bundle, ctx, _marks, events, go = _bundle(tmp_path, ("a", {}),
                                              ("b", {"fail_in": "teardown"}), tile=2)
    go.set()
    bundle.prepare(ctx)
    bundle.run(ctx)
    samples = bundle.collect(ctx)
    bundle.teardown(ctx)  # does not raise: a's figures stay the trial's
    assert [(e["workload"], e["step"]) for e in events if e["event"] == "workload_failed"] \
        == [("b-2", "teardown")]
    tiled = {(s.metric, s.labels) for s in samples}
    assert ("a.ops", (("tile", "2"),)) in tiled and ("a.ops", ()) in tiled  # tile, mean


def test_the_trials_start_spread_spans_every_tile_not_their_mean(tmp_path: Path) -> None:
    # Tile 1's tools started 0.1 s apart, tile 2's 0.2 s apart, tile 2 0.3 s after tile 1:
    # the trial's start_spread is 0.5 s (it was stored as the tiles' mean, 0.15 s).
    _, ctx, _marks, _events, go = _bundle(tmp_path)  # the context; members below
    starts = {("a", 1): 100.0, ("b", 1): 100.1, ("a", 2): 100.3, ("b", 2): 100.5}
    members = []
    for (name, tile), start in starts.items():
        tool = _Tool(_P(window_start=start))
        tool.go = go
        members.append(Member(Instance(name, tile), _Tool, tool, {}))
    bundle = Bundle(BundleParams(tuple(members)))
    go.set()
    bundle.prepare(ctx)
    bundle.run(ctx)
    spreads = {s.labels: s.value for s in bundle.collect(ctx) if s.metric == "start_spread"}
    assert spreads == {(("tile", "1"),): pytest.approx(0.1), (("tile", "2"),): pytest.approx(0.2),
                       (): pytest.approx(0.5)}
