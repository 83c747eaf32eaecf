"""What disturbs a trial's steady window, and what that does to the trial.

A :class:`TrialWatch` asks each of its *sources* after every trial what disturbed its
steady window — vCenter's events and tasks (engine/hygiene.py), the VMs that are not
the run's busy on its hosts in esxtop (engine/neighbours.py) — and, when something did,
does what the scenario's ``disturbance:`` says (docs/lab-hygiene.md):

- ``flag``: the trial is kept and flagged; ``fail``: it fails (``disturbed: …``);
- ``retry``: it runs again, up to ``retries`` times (the engine sets the attempt aside),
  then the last attempt is kept and flagged.

Every disturbed attempt, and every source that could not look (``unread``), is one
record in the run directory's ``disturbances.jsonl`` and in ``testbed["disturbances"]``;
a resumed run keeps the records of the trials it keeps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vbench.config.hygiene import DisturbanceSpec
from vbench.results.records import TrialResult

if TYPE_CHECKING:
    from vbench.engine.plan import PlannedPoint

DISTURBANCES_FILE = "disturbances.jsonl"
Notice = Callable[[str], None]


@dataclass(frozen=True)
class Said:
    """One disturbance found: its text in the verdict, and its event record."""

    at: float  # controller clock (epoch seconds): the order they are said in
    text: str
    event: dict[str, Any]


class Source(Protocol):
    """One thing a trial is watched by. ``what``: what it reads, as a notice says it
    ("vCenter's events"); ``noun``: the same, short, in a record ("events")."""

    name: str
    what: str
    noun: str

    def __call__(self, result: TrialResult, window: tuple[float, float]) -> list[Said]:
        """The disturbances of ``result``'s steady window; raise when it could not look."""
        ...


class PartlyRead(Exception):
    """Raised by a source that could read only part of what it watches (one host of
    several): what it found there, and why the rest was not read."""

    def __init__(self, why: str, found: list[Said]) -> None:
        super().__init__(why)
        self.found = found


def disturbed_action(watch: DisturbanceSpec, tries: int) -> str:
    """What a disturbed trial gets: ``retried`` (run again; ``tries``: how many times it
    already was), ``fail``, or ``flag`` (kept; also a retry whose attempts are spent)."""
    if watch.action == "retry":
        return "retried" if tries < watch.retries else "flag"
    return watch.action


def why_not(exc: Exception) -> str:
    """What a peer's fault says (a vSphere fault's ``msg``), else its type's name."""
    return str(getattr(exc, "msg", "") or exc) or type(exc).__name__


class TrialWatch:
    """The engine's trial check: every source asked after each trial (see the module)."""

    def __init__(self, spec: DisturbanceSpec | None, sources: Sequence[Source],
                 notice: Notice | None = None) -> None:
        self.spec = spec or DisturbanceSpec()
        self.sources = list(sources)
        self.notice = notice or (lambda _m: None)
        self.disturbed: list[dict[str, Any]] = []
        self.run_dir: Path | None = None
        self._attempts: dict[tuple[int, int], int] = {}
        self._numbered = 0  # records numbered so far (ids are unique in the run)
        # Where the testbed keeps the records (called with all of them after each change).
        self.publish: Callable[[list[dict[str, Any]]], None] = lambda _d: None
        self.log: Callable[..., None] = lambda *_a, **_k: None  # the run's log

    def check_trial(self, point: PlannedPoint, result: TrialResult) -> TrialResult | None:
        """The trial as kept (flagged or failed), or None to run it again."""
        steady = (result.phases.steady_start, result.phases.steady_end)
        if not self.spec.watch or result.status != "ok" or None in steady:
            return result
        found = self._ask((float(steady[0] or 0), float(steady[1] or 0)), result)
        if not found:
            return result
        key = (result.point, result.trial)
        tries = self._attempts.get(key, 0)
        action = disturbed_action(self.spec, tries)
        text = "; ".join(s.text for s in found)
        self._keep(result, action, text, [s.event for s in found])
        if action == "retried":
            self._attempts[key] = tries + 1
            self.notice(f"point {point.index + 1} trial {result.trial} disturbed: {text}; "
                        f"running it again ({tries + 1} of {self.spec.retries})")
            return None
        if action == "fail":
            return replace(result, status="failed", error=f"disturbed: {text}")
        # Said now, as a retry is: the trial's own line reads "ok".
        self.notice(f"point {point.index + 1} trial {result.trial} disturbed: {text}; "
                    "flagged, kept in the statistics")
        return result

    def _ask(self, window: tuple[float, float], result: TrialResult) -> list[Said]:
        """Every source's disturbances, in time order; a source that could not look is
        said and recorded (``unread``), never passed as undisturbed."""
        found: list[Said] = []
        for source in self.sources:
            asked = time.monotonic()
            try:
                got = source(result, window)
            except PartlyRead as exc:  # what it read still counts
                self._unread(result, source, exc, "the rest was watched")
                got = exc.found
            except Exception as exc:  # a source not answering must not cost a measured trial
                self._unread(result, source, exc, "the trial is kept, not watched")
                continue
            self.log("trial_watched", point=result.point, trial=result.trial,
                     source=source.name, disturbances=len(got),
                     seconds=round(time.monotonic() - asked, 3))
            found += got
        return sorted(found, key=lambda s: s.at)

    def _unread(self, result: TrialResult, source: Source, exc: Exception, then: str) -> None:
        """A source that could not look: said, and kept in the testbed (``unread``)."""
        self.notice(f"point {result.point + 1} trial {result.trial}: {source.what} not read "
                    f"({why_not(exc)}); {then}")
        self._keep(result, "unread", f"{source.noun} not read: {why_not(exc)}", [])

    def resumed(self, run_dir: Path, done: Collection[tuple[int, int]]) -> None:
        """A resumed run keeps what its earlier sessions found in the trials it keeps
        (``done``: (point, trial)); a trial it runs again is watched again, with the
        retries its earlier attempts used counted (their records kept: those attempts
        stay set aside) and its interrupted attempt's findings dropped."""
        try:
            lines = (run_dir / DISTURBANCES_FILE).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return
        self._numbered = len(lines)  # ids go on after the file's
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:  # a line a kill -9 cut short
                continue
            if not isinstance(entry, dict):
                continue
            key = (entry.get("point"), entry.get("trial"))
            if key in done:
                self.disturbed.append(entry)
            elif entry.get("action") == "retried":
                self.disturbed.append(entry)
                self._attempts[key] = self._attempts.get(key, 0) + 1
        if self.disturbed:
            self.publish(list(self.disturbed))

    def _keep(self, result: TrialResult, action: str, text: str,
              events: list[dict[str, Any]]) -> None:
        """One disturbed (or not watched) attempt: in the testbed and disturbances.jsonl."""
        self._numbered += 1
        entry = {"id": f"point {result.point + 1} trial {result.trial} #{self._numbered}",
                 "point": result.point, "trial": result.trial, "action": action,
                 "text": text, "events": events}
        self.disturbed.append(entry)
        if self.run_dir is not None:
            with (self.run_dir / DISTURBANCES_FILE).open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
        self.publish(list(self.disturbed))
