"""Per-point lab hooks: apply a factor level's lab set-up before its point, undo it after.

A factor with a ``hook`` (:mod:`vbench.config.hookspec`) names a lab node and two argv
templates. :class:`LabHooks` is one of the engine's point hooks (see
:mod:`vbench.engine.schedule`): ``enter`` runs each hook's ``run`` command on its node
over SSH before the point's first trial, ``exit`` runs the ``undo`` commands (reverse
order) when the engine leaves the point — after its trials, and on every exit path:
failure, Ctrl-C/SIGTERM, an exception.

Every application is journaled in ``hooks.jsonl`` in the run directory *before* its
command starts (state ``applying``), then ``applied``/``apply_failed``, and ``undone``
once its undo succeeded. A run killed with kill -9 leaves applications without
``undone``: ``vbench cleanup RUN`` runs their undo (:func:`undo_pending`), like it
destroys the vSphere objects the vSphere journal names. Records are appended and
fsynced, so a record that is written is not lost with the process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.config.hookspec import render_argv, value_text
from vbench.errors import ConfigError, LabError, VbenchError
from vbench.results.journal_file import AppendJournal
from vbench.templates import has_control

if TYPE_CHECKING:
    from vbench.config.lab import Lab
    from vbench.config.scenario import Scenario
    from vbench.engine.plan import PlannedPoint
    from vbench.guest.ssh import Guest

JOURNAL = "hooks.jsonl"
PENDING = ("applying", "applied", "apply_failed", "undo_failed")


@dataclass(frozen=True)
class PlannedHook:
    """One hook of one point, its values substituted (what `vbench plan` shows)."""

    factor: str
    level: str
    node: str
    run: tuple[str, ...]
    undo: tuple[str, ...]
    timeout: float


def planned_hooks(scenario: Scenario, labels: Mapping[str, str]) -> list[PlannedHook]:
    """The hooks of the point with these factor labels, in factor order."""
    out = []
    for name, factor in scenario.factors.items():
        if factor.hook is None or name not in labels:
            continue
        level = next(lv for lv in factor.levels if lv.label == labels[name])
        value = value_text(level.value, level.label)
        if has_control(value) or has_control(level.label):
            raise ConfigError(f"factors.{name}: level {level.label!r}: control characters "
                              "cannot go into a hook command")
        h = factor.hook
        out.append(PlannedHook(name, level.label, h.node, render_argv(h.run, value, level.label),
                               render_argv(h.undo, value, level.label), h.timeout))
    return out


def hooks_plan(scenario: Scenario, points: Sequence[PlannedPoint]) -> dict[str, Any]:
    """Per point index, its hooks as planned (recorded in the run's plan.json)."""
    out = {}
    for p in points:
        hooks = planned_hooks(scenario, p.labels)
        if hooks:
            out[str(p.index)] = [asdict(h) for h in hooks]
    return out


def check_nodes(scenario: Scenario, lab: Lab) -> None:
    """Every hook's node is a lab node (reported before anything runs)."""
    for name, factor in scenario.factors.items():
        if factor.hook is not None and factor.hook.node not in lab.nodes:
            known = ", ".join(lab.nodes) or "none"
            raise ConfigError(f"factors.{name}.hook.node: {factor.hook.node!r} is not a node "
                              f"of the lab (nodes: {known})")


class HookJournal(AppendJournal):
    """Append-only record of hook applications in the run directory."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir / JOURNAL)

    def pending(self) -> list[dict[str, Any]]:
        """The last record of every application not undone, oldest first."""
        return self.last_in(PENDING)


Connect = Callable[[str], Any]  # node name -> a context manager yielding a Guest


class LabHooks:
    """The engine point hook applying and undoing the scenario's lab hooks."""

    def __init__(self, scenario: Scenario, lab: Lab, run_dir: Path,
                 log: Callable[..., None], connect: Connect | None = None) -> None:
        check_nodes(scenario, lab)
        self.scenario, self.lab, self.log = scenario, lab, log
        self.journal = HookJournal(run_dir)
        self.connect = connect or (lambda node: _connect(lab, node))
        self._applied: list[tuple[str, PlannedHook]] = []
        # Ids stay unique in the journal when a resumed run appends to it: a pending
        # application of the earlier session keeps its own id (cleanup undoes it).
        self._count = len(self.journal.read())

    def enter(self, point: PlannedPoint) -> None:
        for hook in planned_hooks(self.scenario, point.labels):
            self._count += 1
            hid = f"p{point.index}-{hook.factor}-{self._count}"
            rec = {"id": hid, "point": point.index, **asdict(hook)}
            self.journal.append({**rec, "state": "applying"})
            # Undone even when the command fails: a half-applied setting is still undone.
            self._applied.append((hid, hook))
            self.log("hook_apply", point=point.index, factor=hook.factor, setting=hook.level,
                     node=hook.node, argv=list(hook.run))
            error = self._run(hook.node, hook.run, hook.timeout)
            self.journal.append({**rec, "state": "apply_failed" if error else "applied",
                                 **({"error": error} if error else {})})
            if error:
                failure = LabError(f"node {hook.node}", f"hook {hook.factor}={hook.level}: "
                                   f"{error}")
                # The engine exits only hooks whose enter returned: undo what was set here.
                try:
                    self.exit(point, failure)
                except LabError as undo_error:
                    self.log("hook_undo_failed", level="error", message=str(undo_error))
                raise failure

    def exit(self, point: PlannedPoint, error: BaseException | None) -> None:
        failed = []
        for hid, hook in reversed(self._applied):
            self.log("hook_undo", point=point.index, factor=hook.factor, setting=hook.level,
                     node=hook.node, argv=list(hook.undo),
                     because=type(error).__name__ if error else None)
            problem = self._run(hook.node, hook.undo, hook.timeout)
            rec = {"id": hid, "point": point.index, **asdict(hook)}
            if problem:
                self.journal.append({**rec, "state": "undo_failed", "error": problem})
                failed.append(f"hook {hook.factor}={hook.level} on node {hook.node}: {problem}")
            else:
                self.journal.append({**rec, "state": "undone"})
                self.log("hook_undone", point=point.index, factor=hook.factor, setting=hook.level)
        self._applied = []
        if failed:
            raise LabError("hooks", "undo failed (vbench cleanup RUN retries it): "
                           + "; ".join(failed))

    def _run(self, node: str, argv: Sequence[str], timeout: float) -> str | None:
        return _run_on(self.connect, node, argv, timeout)


def _run_on(connect: Connect, node: str, argv: Sequence[str], timeout: float) -> str | None:
    """Run ``argv`` on ``node``: None when it succeeded, else one line saying why not."""
    try:
        with connect(node) as guest:
            res = guest.run(list(argv), timeout=timeout, check=False)
    except VbenchError as exc:
        return str(exc)
    if res.status == 0:
        return None
    said = [ln for ln in (res.stderr + "\n" + res.stdout).splitlines() if ln.strip()]
    return f"`{' '.join(argv)}` exited {res.status}" + (f": {said[-1].strip()}" if said
                                                        else "")


@contextmanager
def _connect(lab: Lab, node: str) -> Iterator[Guest]:
    # Imported when a hook runs: `vbench plan` reads the hooks' plan (planned_hooks) and
    # reaches no guest (nor builds the lab's models, which guest_spec's module imports).
    from vbench.guest.labspec import guest_spec
    from vbench.guest.ssh import Guest

    with Guest(guest_spec(lab, node)) as guest:
        yield guest


def hooks_for(scenario: Scenario, lab: Lab, run_dir: Path,
              log: Callable[..., None]) -> list[LabHooks]:
    """The point hooks a run needs (none when no factor has a hook)."""
    if not any(f.hook is not None for f in scenario.factors.values()):
        return []
    return [LabHooks(scenario, lab, run_dir, log)]


def undo_pending(lab: Lab, run_dir: Path, connect: Connect | None = None) -> tuple[
        list[str], list[str]]:
    """Undo what a killed run left applied; (undone, errors) as lines for the CLI."""
    journal = HookJournal(run_dir)
    connect = connect or (lambda node: _connect(lab, node))
    done, errors = [], []
    for rec in reversed(journal.pending()):
        what = f"hook {rec['factor']}={rec['level']} on node {rec['node']}"
        if rec["node"] not in lab.nodes:
            errors.append(f"{what}: node not in this lab file")
            continue
        # One line (the last the command said), as when the run itself undoes a hook.
        problem = _run_on(connect, rec["node"], rec["undo"], rec.get("timeout", 60))
        if problem:
            journal.append({**rec, "state": "undo_failed", "error": problem})
            errors.append(f"{what}: {problem}")
        else:
            journal.append({**rec, "state": "undone", "by": "cleanup"})
            done.append(what)
    return done, errors
