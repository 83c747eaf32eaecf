"""Files a lab names for the endpoints a run uses, checked before anything connects:
an SSH key file that is missing or unreadable would otherwise surface as an SSH failure
in the middle of the run (after VMs were cloned), far from the lab file line that names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vbench.config.lab import Lab
from vbench.config.load import Loaded
from vbench.config.localfiles import file_problem, shown_path
from vbench.config.secrets import expand_path
from vbench.engine.plan import Plan
from vbench.errors import ConfigIssue
from vbench.guest.locallab import lab_dir

PathT = tuple[str | int, ...]


def key_file_issues(plan: Plan, lab: Loaded[Lab]) -> list[ConfigIssue]:
    """Every key file of a node, VM, ESXi host or jump host the plan reaches by SSH that
    does not exist or cannot be read, located where the lab file sets it."""
    seen: set[tuple[PathT, str]] = set()
    out: list[ConfigIssue] = []
    for where, value in _key_files(plan, lab.model):
        path = Path(expand_path(value))
        if (where, str(path)) in seen:
            continue
        seen.add((where, str(path)))
        problem = _problem(path, lab.model)
        if problem is not None:
            out.append(lab.source.issue(where, problem))
    return out


def _problem(path: Path, lab: Lab) -> str | None:
    why = file_problem(path)
    if why is None:
        return None
    if why == "not found":
        made_by_lab_up = lab.local is not None and lab_dir() in path.parents
        hint = " (`vbench lab up` with this lab file creates it)" if made_by_lab_up else ""
        return f"key file {path} not found{hint}"
    if why == "not readable":
        return f"key file {path} is not readable by {_user()}"
    if why == "is a directory":
        return f"key file {path} is a directory"
    shown = repr(shown_path(path)) if "\0" in str(path) else shown_path(path)
    return f"key file {shown}: {why}"


def _user() -> str:
    import getpass

    return getpass.getuser()


def _key_files(plan: Plan, lab: Lab) -> Iterator[tuple[PathT, str]]:
    """(where the lab file sets the key, the key file) for every endpoint used."""
    used = {n for names in plan.groups.values() for n in names}
    nodes = [n for n in lab.nodes if n in used]
    has_vms = any(n not in lab.nodes for n in used)  # guests of `vm:` groups
    for name in nodes:
        node = lab.nodes[name]
        yield from _own_or_default(lab, ("nodes", name), node.key_file)
        yield from _jump(lab, node.jump)
    if has_vms:
        yield from _own_or_default(lab, ("defaults",), None)
        yield from _jump(lab, None)
    esxtop = [c for c in plan.scenario.collectors if c.kind == "esxtop"]
    for name in lab.hosts:
        if any(not c.targets or name in c.targets for c in esxtop):
            host = lab.hosts[name]
            yield from _own_or_default(lab, ("hosts", name), host.key_file)
            yield from _jump(lab, host.jump)


def _own_or_default(lab: Lab, where: PathT, own: str | None) -> Iterator[tuple[PathT, str]]:
    if own:
        yield (*where, "key_file"), own
    elif lab.defaults.key_file:
        yield ("defaults", "key_file"), lab.defaults.key_file


def _jump(lab: Lab, own: str | None) -> Iterator[tuple[PathT, str]]:
    name = own or lab.defaults.jump
    if name and name in lab.jump_hosts:
        yield from _own_or_default(lab, ("jump_hosts", name), lab.jump_hosts[name].key_file)


def check_key_files(plan: Plan, lab_file: str | Path) -> None:
    """Raise ConfigValidationError (exit 2) naming every unusable key file."""
    from vbench.config.load import load_lab
    from vbench.errors import ConfigValidationError

    issues = key_file_issues(plan, load_lab(lab_file))
    if issues:
        raise ConfigValidationError(issues)
