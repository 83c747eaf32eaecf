"""Live progress for `vbench run`: points, trials, the phase and the time left.

On a terminal it is a rich live display; elsewhere (cron, CI, pipes) one plain line
per trial, so logs stay readable: its time, the point (1-based, with its factor values),
the trial, its status and headline figure, and the time left. Both show one estimate of
the time left (:class:`vbench.cli.eta.Eta`); a find-max search's is a range, from the
levels and trials the search may still run. A resumed run first says what it kept.

What a lab or a scenario names (a VM another team named 'db [/old]' in vCenter, a guest
tool's error, a factor value) is printed as text, never as rich markup, and its control
characters as ``\\xNN`` (vbench/shown.py), as `vbench show` prints them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.text import Text

from vbench.cli.eta import Eta
from vbench.cli.options import counted, span, text_console
from vbench.config.types import format_duration
from vbench.engine.plan import Plan, PlannedPoint
from vbench.engine.runner import ProgressSink
from vbench.results.records import TrialResult
from vbench.shown import shown_text

if TYPE_CHECKING:
    from vbench.analysis.findmax import Outlook
    from vbench.results.store import Store


def point_text(point: PlannedPoint, plan: Plan) -> str:
    """``point 2/6 [bs=4k, iodepth=8]`` (a search: ``level 8 [iodepth=8]``), 1-based."""
    labels = ", ".join(f"{k}={v}" for k, v in point.labels.items())
    search = plan.scenario.search
    if search is not None:  # levels are created as it runs
        where = f"level {point.labels.get(search.factor, '?')}"
    else:
        where = f"point {point.index + 1}/{len(plan.points)}"
    return f"{where} [{labels}]" if labels else where


def headline_text(result: TrialResult, metrics: Sequence[str]) -> str | None:
    """The trial's first headline figure it has (over its guests), e.g. ``total_iops
    12,345 IO/s``: a headline a trial cannot have — a derived figure made across trials
    or points (normalize, speedup) — gives way to the next."""
    from vbench.report.data import fmt_value

    whole = {s.metric: s for s in result.samples
             if s.guest is None and not s.labels and s.value is not None}
    for metric in metrics:
        if metric in whole:
            return f"{metric} {fmt_value(whole[metric].value, whole[metric].unit)}"
    return None


def failed_workloads(result: TrialResult) -> list[str]:
    """The workloads of a ``workloads:`` trial that failed (``<name>.ok`` = 0), each named
    with its tile (``cache-2``): the trial itself stays ok, so its line must say so."""
    from vbench.config.tiles import OK_METRIC, TILE_LABEL

    oks = [s for s in result.samples if s.guest is None and s.metric.endswith(f".{OK_METRIC}")]
    tiled = {s.metric for s in oks if s.labels}
    out = []
    for s in oks:
        if s.value != 0.0 or (not s.labels and s.metric in tiled):
            continue  # the mean over the tiles: each tile's own is named
        name = s.metric[: -len(OK_METRIC) - 1]
        tile = dict(s.labels).get(TILE_LABEL)
        out.append(f"{name}-{tile}" if tile else name)
    return out


@dataclass(frozen=True)
class Kept:
    """What a resumed run keeps of its earlier sessions: its finished trials (ok or
    failed) and the points (levels) they are at; interrupted trials run again."""

    run_id: str
    trials: int
    ok: int
    points: int
    rerun: int

    @classmethod
    def of(cls, store: Store, run_id: str) -> Kept:
        trials = store.trials(run_id)
        kept = [t for t in trials if t.status != "interrupted"]
        return cls(run_id, len(kept), sum(t.status == "ok" for t in kept),
                   len({t.point for t in kept}), len(trials) - len(kept))

    def text(self, plan: Plan) -> str:
        """``resuming run R: kept 4 trials (3 ok) of 2 points; 2 of 6 trials remain``."""
        search = plan.scenario.search is not None
        where = counted(self.points, "level" if search else "point")
        out = f"resuming run {self.run_id}: kept {counted(self.trials, 'trial')} " \
              f"({self.ok} ok) of {where}"
        if self.rerun:
            out += f"; {counted(self.rerun, 'interrupted trial')} run again"
        if search:
            return out + "; the search replays them and goes on from where it stopped"
        if plan.repeat_max is not None:  # an adaptive repeat: a range is left
            lo, hi = (max(0, n - self.trials) for n in plan.trials_span)
            return out + f"; {span((lo, hi))} of {span(plan.trials_span)} trials remain"
        left = max(0, plan.n_trials - self.trials)
        return out + f"; {left} of {counted(plan.n_trials, 'trial')} remain"


class RichProgress(ProgressSink):
    def __init__(self, console: Console | None = None, kept: Kept | None = None) -> None:
        self.console = console or text_console(stderr=True)
        self._kept = kept  # a resumed run: what its earlier sessions left
        self._outlook: Outlook | None = None  # a search: what it may still run
        self.live = self.console.is_terminal
        self._progress: Progress | None = None
        self._task: int | None = None
        self._plan: Plan | None = None
        self._point: PlannedPoint | None = None
        self._trial = 0
        self._phase_end: float | None = None
        self._remaining_s = 0.0
        self._eta: Eta | None = None  # the one estimate of the time left
        self._headlines: tuple[str, ...] = ()  # the figures a plain progress line may show

    def start_run(self, plan: Plan) -> None:
        self._plan = plan
        self._remaining_s = plan.estimated_seconds
        if self._kept is not None:
            self.console.print(self._kept.text(plan), highlight=False, markup=False)
        if not self.live:
            self.console.print(_run_text(plan, self._kept), highlight=False, markup=False)
            return
        self._progress = Progress(
            # The description holds "[bs=4k]" and lab names: text, not markup.
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("trials · run left ≈ {task.fields[left]}"),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "starting", total=plan.n_trials, left=format_duration(plan.estimated_seconds)
        )

    def start_trial(self, point: PlannedPoint, trial: int) -> None:
        assert self._plan is not None
        if self._eta is None:
            from vbench.engine.session import headline_of

            # A resumed matrix run skips the trials it kept (a search says what is left).
            matrix = self._plan.scenario.search is None
            self._eta = Eta(self._plan, skipped=self._kept.trials if self._kept and matrix else 0)
            self._headlines = headline_of(self._plan)
        self._point, self._trial = point, trial
        self._eta.start_trial(point, self._outlook.trials if self._outlook else None)
        self.phase("prepare", None)

    def outlook(self, outlook: Outlook) -> None:
        searching = self._plan is not None and self._plan.scenario.search is not None
        if searching and self._kept is not None and self._outlook is None:  # a resumed search
            self.console.print(f"the search goes on: {span(outlook.levels)} more levels at most, "
                               f"{span(outlook.trials)} trials", highlight=False, markup=False)
        self._outlook = outlook
        if self._progress is not None and self._task is not None:  # the bar's length
            done = self._progress.tasks[0].completed
            self._progress.update(self._task, total=done + outlook.trials[1])

    def _left(self) -> str:
        """``3 min``; a search: ``40 s–2 min, at most 5 more levels``."""
        if self._eta is None:
            return "?"
        text = span(self._eta.left_range(), format_duration)
        if self._outlook is not None and self._plan is not None and self._plan.scenario.search:
            most = self._outlook.levels[1]
            text += f", at most {counted(most, 'more level')}" if most else ", no new level"
        return text

    def _trial_of(self) -> str:
        assert self._plan is not None
        plan = self._plan
        per = span((plan.repeat, plan.most_per_point))  # an adaptive repeat: 3–12
        of = "" if plan.scenario.search is not None else f"/{per}"
        return f"trial {self._trial}{of}"

    def phase(self, name: str, seconds: float | None) -> None:
        self._phase_end = time.monotonic() + seconds if seconds else None
        if self._progress is None or self._task is None or self._point is None:
            return
        assert self._plan is not None
        left = f" ({format_duration(seconds)})" if seconds else ""
        self._progress.update(
            self._task,
            description=shown_text(
                f"{point_text(self._point, self._plan)} {self._trial_of()} · {name}{left}"
            ),
            left=self._left(),
        )

    def end_trial(self, result: TrialResult) -> None:
        assert self._plan is not None
        if self._eta is not None:
            self._eta.end_trial()
        # The trial's own point: a search schedule creates points the plan does not list.
        where = (point_text(self._point, self._plan) if self._point is not None
                 else f"point {result.point + 1}")
        failed = failed_workloads(result)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, left=self._left())
            if result.status != "ok":
                self._progress.console.print(Text.assemble(
                    (shown_text(f"{where} trial {result.trial} {result.status}:"), "red"),
                    f" {shown_text(str(result.error))}"), highlight=False)
            elif failed:
                said = f"{where} trial {result.trial}: {', '.join(failed)} failed"
                self._progress.console.print(Text.assemble(
                    (shown_text(said), "red"), " (the run log's workload_failed says why)"),
                    highlight=False)
            return
        # One plain line per trial (cron, CI): when, where, what it measured, time left.
        figure = headline_text(result, self._headlines) if result.status == "ok" else None
        line = (f"{time.strftime('%Y-%m-%d %H:%M:%S')} {where} {self._trial_of()}: "
                f"{result.status}")
        if figure:
            line += f" · {figure}"
        if failed:
            line += f" · {', '.join(failed)} failed"
        if result.error:
            line += f" — {result.error}"
        print(shown_text(f"{line} · run left ≈ {self._left()}"), file=sys.stderr, flush=True)

    def end_run(self) -> None:
        if self._progress is not None:
            self._progress.stop()

    def notice(self, message: str) -> None:
        """An engine's line (a disturbance, a hygiene finding, a clean-up): it names
        the lab's VMs and hosts, and quotes their errors."""
        self.console.print(shown_text(message), highlight=False, markup=False)


def _run_text(plan: Plan, kept: Kept | None = None) -> str:
    """The first plain line: what runs and how long it should take (a resumed run: what
    is left of it)."""
    from vbench.engine.estimate import search_estimate

    search, est = plan.scenario.search, search_estimate(plan)
    per = span((plan.repeat, plan.most_per_point))
    size = f"{counted(len(plan.points), 'point')} × {per} trial{'s' if per != '1' else ''}"
    if search is None and kept is not None and plan.repeat_max is not None:
        lo, hi = (max(0, n - kept.trials) for n in plan.trials_span)
        return f"running the {span((lo, hi))} trials left of {size} (at most)"
    if search is None and kept is not None:
        left = max(0, plan.n_trials - kept.trials)
        seconds = (plan.setup_seconds + plan.finish_seconds
                   + plan.trials_seconds * left / max(1, plan.n_trials))
        return (f"running the {counted(left, 'trial')} left of {size} "
                f"(estimated {format_duration(seconds)})")
    if search is None and plan.repeat_max is not None:  # as the plan says: min..max
        return f"running {size} (estimated {span(plan.seconds_span, format_duration)})"
    if search is None or est is None:
        return f"running {size} (estimated {format_duration(plan.estimated_seconds)})"
    if kept is not None:  # its first trial says what the search has left
        return (f"running the rest of a find-max search over {search.factor} "
                f"({counted(len(plan.points), 'search', 'searches')}; levels chosen as it runs)")
    return (f"running a find-max search over {search.factor} "
            f"({counted(len(plan.points), 'search', 'searches')}; levels chosen as it runs: "
            f"{span(est.outlook.levels)} levels, {span(est.outlook.trials)} trials, "
            f"estimated {span(est.seconds, format_duration)}"
            # under an adaptive repeat the most counts every level at its max trials
            + (")" if plan.repeat_max is not None else " if no level is noisy)"))
