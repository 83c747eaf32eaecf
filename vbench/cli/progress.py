"""Live progress for `vbench run`: points, trials, the phase and the time left.

On a terminal it is a rich live display; elsewhere (cron, CI, pipes) one plain line
per trial, so logs stay readable.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from vbench.cli.options import counted
from vbench.config.types import format_duration
from vbench.engine.plan import Plan, PlannedPoint
from vbench.engine.runner import ProgressSink
from vbench.results.records import TrialResult


class RichProgress(ProgressSink):
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal
        self._progress: Progress | None = None
        self._task: int | None = None
        self._plan: Plan | None = None
        self._point: PlannedPoint | None = None
        self._trial = 0
        self._phase_end: float | None = None
        self._remaining_s = 0.0

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
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "starting", total=plan.n_trials, left=format_duration(plan.estimated_seconds)
        )

    def start_trial(self, point: PlannedPoint, trial: int) -> None:
        self._point, self._trial = point, trial
        self.phase("prepare", None)

    def phase(self, name: str, seconds: float | None) -> None:
        self._phase_end = time.monotonic() + seconds if seconds else None
        if self._progress is None or self._task is None or self._point is None:
            return
        assert self._plan is not None
        label = ", ".join(f"{k}={v}" for k, v in self._point.labels.items()) or "-"
        of = "" if self._plan.scenario.search is not None else f"/{self._plan.repeat}"
        left = f" ({format_duration(seconds)})" if seconds else ""
        self._progress.update(
            self._task,
            description=(
                f"{self._where()} [{label}] trial {self._trial}{of} · {name}{left}"
            ),
        )

    def _where(self) -> str:
        assert self._plan is not None and self._point is not None
        if self._plan.scenario.search is not None:  # levels are created as it runs
            return f"level {self._point.labels.get(self._plan.scenario.search.factor, '?')}"
        return f"point {self._point.index + 1}/{len(self._plan.points)}"

    def end_trial(self, result: TrialResult) -> None:
        assert self._plan is not None
        # The trial's own point: a search schedule creates points the plan does not list.
        seconds = self._point.trial_seconds if self._point is not None else 0.0
        self._remaining_s = max(
            0.0, self._remaining_s - seconds - self._plan.overhead_per_trial
        )
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, left=format_duration(self._remaining_s))
            if result.status != "ok":
                self._progress.console.print(
                    f"[red]point {result.point + 1} trial {result.trial} {result.status}:[/] "
                    f"{result.error}",
                    highlight=False,
                )
            return
        line = f"point {result.point + 1} trial {result.trial}: {result.status}"
        if result.error:
            line += f" — {result.error}"
        print(line, file=sys.stderr, flush=True)

    def end_run(self) -> None:
        if self._progress is not None:
            self._progress.stop()

    def notice(self, message: str) -> None:
        self.console.print(message, highlight=False, markup=False)
