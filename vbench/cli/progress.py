"""Live progress for `vbench run`: points, trials, the phase and the time left.

On a terminal it is a rich live display; elsewhere (cron, CI, pipes) one plain line
per trial, so logs stay readable: its time, the point (1-based, with its factor values),
the trial, its status and headline figure, and the time left. Both show one estimate of
the time left (:class:`vbench.cli.eta.Eta`).
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from vbench.cli.eta import Eta
from vbench.cli.options import counted, text_console
from vbench.config.types import format_duration
from vbench.engine.plan import Plan, PlannedPoint
from vbench.engine.runner import ProgressSink
from vbench.results.records import TrialResult


def point_text(point: PlannedPoint, plan: Plan) -> str:
    """``point 2/6 [bs=4k, iodepth=8]`` (a search: ``level 8 [iodepth=8]``), 1-based."""
    labels = ", ".join(f"{k}={v}" for k, v in point.labels.items())
    search = plan.scenario.search
    if search is not None:  # levels are created as it runs
        where = f"level {point.labels.get(search.factor, '?')}"
    else:
        where = f"point {point.index + 1}/{len(plan.points)}"
    return f"{where} [{labels}]" if labels else where


def headline_text(result: TrialResult, metric: str | None) -> str | None:
    """The trial's headline figure (over its guests), e.g. ``total_iops 12,345 IO/s``."""
    from vbench.report.data import fmt_value

    for s in result.samples:
        if s.metric == metric and s.guest is None and not s.labels and s.value is not None:
            return f"{metric} {fmt_value(s.value, s.unit)}"
    return None


class RichProgress(ProgressSink):
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or text_console(stderr=True)
        self.live = self.console.is_terminal
        self._progress: Progress | None = None
        self._task: int | None = None
        self._plan: Plan | None = None
        self._point: PlannedPoint | None = None
        self._trial = 0
        self._phase_end: float | None = None
        self._remaining_s = 0.0
        self._eta: Eta | None = None  # the one estimate of the time left
        self._headline: str | None = None  # the figure a plain progress line shows

    def start_run(self, plan: Plan) -> None:
        self._plan = plan
        self._remaining_s = plan.estimated_seconds
        if not self.live:
            search = plan.scenario.search
            self.console.print(
                f"running a find-max search over {search.factor} ("
                f"{counted(len(plan.points), 'search', 'searches')}; levels chosen as it runs)"
                if search is not None else
                f"running {counted(len(plan.points), 'point')} × "
                f"{counted(plan.repeat, 'trial')} "
                f"(estimated {format_duration(plan.estimated_seconds)})",
                highlight=False,
            )
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
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

            self._eta = Eta(self._plan)
            self._headline = next(iter(headline_of(self._plan)), None)
        self._point, self._trial = point, trial
        self._eta.start_trial(point)
        self.phase("prepare", None)

    def _left(self) -> str:
        return format_duration(self._eta.left()) if self._eta is not None else "?"

    def _trial_of(self) -> str:
        assert self._plan is not None
        of = "" if self._plan.scenario.search is not None else f"/{self._plan.repeat}"
        return f"trial {self._trial}{of}"

    def phase(self, name: str, seconds: float | None) -> None:
        self._phase_end = time.monotonic() + seconds if seconds else None
        if self._progress is None or self._task is None or self._point is None:
            return
        assert self._plan is not None
        left = f" ({format_duration(seconds)})" if seconds else ""
        self._progress.update(
            self._task,
            description=(
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
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, left=self._left())
            if result.status != "ok":
                self._progress.console.print(
                    f"[red]{where} trial {result.trial} {result.status}:[/] {result.error}",
                    highlight=False, markup=True,
                )
            return
        # One plain line per trial (cron, CI): when, where, what it measured, time left.
        figure = headline_text(result, self._headline) if result.status == "ok" else None
        line = (f"{time.strftime('%Y-%m-%d %H:%M:%S')} {where} {self._trial_of()}: "
                f"{result.status}")
        if figure:
            line += f" · {figure}"
        if result.error:
            line += f" — {result.error}"
        print(f"{line} · run left ≈ {self._left()}", file=sys.stderr, flush=True)

    def end_run(self) -> None:
        if self._progress is not None:
            self._progress.stop()

    def notice(self, message: str) -> None:
        self.console.print(message, highlight=False, markup=False)
