"""Whether two runs measured the same thing, and if not, what differs — said as a diff.

Two runs are compared on what each recorded (see :mod:`vbench.results.identity`): the
resolved scenario after ``--set`` (its hash, and leaf by leaf when the hashes differ),
the ``--set`` arguments, and the lab (its kind and its resolved description). The
differences print as plain ``-``/``+`` lines that fit 100 columns::

    scenario differs (3f2a1b0c9d8e → 9c8d7e6f5a4b):
      - workload.params.rate_iops: 1000
      + workload.params.rate_iops: 2000
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench.analysis.figures import MEASUREMENT_KEYS
from vbench.results.identity import RunIdentity, identity_of

WIDTH = 100
MAX_CHANGES = 12  # change lines printed per section; the rest is counted
# A list of mappings whose items carry one of these keys is matched item by item.
_ITEM_KEYS = ("name", "label", "kind")


@dataclass(frozen=True)
class Change:
    """One leaf that differs; ``None`` on the side that does not have it."""

    path: str
    a: str | None
    b: str | None

    @property
    def text(self) -> str:
        """``path: a → b`` on one line."""
        return f"{self.path}: {_side(self.a)} → {_side(self.b)}"


def _side(value: str | None) -> str:
    return "absent" if value is None else value


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def value_text(value: Any) -> str:
    """A compact, YAML-like text of a value: ``{a: 1, b: [x, y]}``."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return _scalar(value)


def _item_key(items: Sequence[Any]) -> str | None:
    """The key that names every item of a list of mappings, if one does (uniquely)."""
    if not items or not all(isinstance(x, Mapping) for x in items):
        return None
    for key in _ITEM_KEYS:
        names = [x.get(key) for x in items]
        if all(n is not None for n in names) and len(set(map(str, names))) == len(names):
            return key
    return None


def _walk_keyed(a: Mapping[str, Any], b: Mapping[str, Any], sub: Any,
                out: list[Change]) -> None:
    """Entries of two mappings, named by ``sub(key)``: a's order, then b's new keys."""
    for k in [*a, *(k for k in b if k not in a)]:
        if k not in b:
            out.append(Change(sub(k), value_text(a[k]), None))
        elif k not in a:
            out.append(Change(sub(k), None, value_text(b[k])))
        else:
            _walk(a[k], b[k], sub(k), out)


def _walk(a: Any, b: Any, path: str, out: list[Change]) -> None:
    if a == b:
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        _walk_keyed(a, b, lambda k: f"{path}.{k}" if path else str(k), out)
        return
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        key = _item_key(a)
        if key is not None and _item_key(b) == key:
            # Factor levels, collectors …: matched by name, not by position.
            _walk_keyed({str(x[key]): x for x in a}, {str(x[key]): x for x in b},
                        lambda k: f"{path}[{k}]", out)
            return
    out.append(Change(path, value_text(a), value_text(b)))


def changes(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[Change]:
    """Every leaf that differs between documents ``a`` and ``b``, in ``a``'s order."""
    out: list[Change] = []
    _walk(dict(a or {}), dict(b or {}), "", out)
    return out


@dataclass(frozen=True)
class Comparability:
    """What differs between run A and run B in what they measured and where."""

    a: RunIdentity
    b: RunIdentity
    scenario: tuple[Change, ...]  # leaves of the resolved scenario
    lab: tuple[Change, ...]  # the lab's kind, then leaves of its description

    @property
    def same_scenario(self) -> bool:
        return self.a.scenario_hash == self.b.scenario_hash or not self.scenario

    @property
    def same_lab(self) -> bool:
        return not self.lab

    @property
    def same_overrides(self) -> bool:
        return self.a.overrides == self.b.overrides

    @property
    def alike(self) -> bool:
        """The same scenario (after --set) in the same lab."""
        return self.same_scenario and self.same_lab

    def measurement_changes(self) -> list[Change]:
        """The scenario changes that change what is measured."""
        return [c for c in self.scenario if c.path.split(".", 1)[0].split("[", 1)[0]
                in MEASUREMENT_KEYS]

    def summary(self) -> str:
        """One line: what differs (empty when nothing does)."""
        parts = []
        if self.scenario:
            parts.append(_first("scenario", self.scenario))
        if self.lab:
            parts.append(_first("lab", self.lab))
        return "; ".join(parts)

    def lines(self, width: int = WIDTH, labels: tuple[str, str] = ("A", "B")) -> list[str]:
        """The differences as plain lines of at most ``width`` columns."""
        la, lb = labels
        out: list[str] = []
        if self.scenario:
            out.append(f"scenario differs ({self.a.scenario_hash} → {self.b.scenario_hash}):")
            out += _diff(self.scenario, width)
        else:
            out.append(f"scenario: same (hash {self.a.scenario_hash})")
        if self.a.overrides or self.b.overrides:
            if self.same_overrides:
                out += _wrap(f"--set (both): {' '.join(self.a.overrides)}", width)
            else:
                out += _wrap(f"--set in {la}: {' '.join(self.a.overrides) or 'none'}", width)
                out += _wrap(f"--set in {lb}: {' '.join(self.b.overrides) or 'none'}", width)
        if self.lab:
            out.append(f"lab differs ({self.a.lab_fingerprint} → {self.b.lab_fingerprint}):")
            out += _diff(self.lab, width)
        else:
            out.append(f"lab: same ({self.a.lab_name or '-'}, {self.a.lab_kind.text})")
        return [_cut(line, width) for line in out]


def _first(what: str, found: Sequence[Change]) -> str:
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return f"{what} differs: {found[0].text}{more}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _wrap(text: str, width: int) -> list[str]:
    """Long --set lists over several lines, at spaces, continuation lines indented."""
    words, lines, line = text.split(" "), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = "    " + w
        else:
            line = f"{line} {w}" if line else w
    return [*lines, line]


def _diff(found: Sequence[Change], width: int) -> list[str]:
    out = []
    for c in found[:MAX_CHANGES]:
        if c.a is not None:
            out.append(_cut(f"  - {c.path}: {c.a}", width))
        if c.b is not None:
            out.append(_cut(f"  + {c.path}: {c.b}", width))
    if len(found) > MAX_CHANGES:
        out.append(f"  … {len(found) - MAX_CHANGES} more (--json lists every difference)")
    return out


def _lab_changes(ia: RunIdentity, ib: RunIdentity, a: Mapping[str, Any],
                 b: Mapping[str, Any]) -> list[Change]:
    kind = [] if ia.lab_kind == ib.lab_kind else [
        Change("kind", ia.lab_kind.text, ib.lab_kind.text)]
    return kind + changes(a, b)


def compare_runs(run_a: Mapping[str, Any], run_b: Mapping[str, Any]) -> Comparability:
    """What differs between two stored runs (store rows as mappings)."""
    ia, ib = identity_of(run_a), identity_of(run_b)
    scenario = [] if ia.scenario_hash == ib.scenario_hash else changes(
        run_a.get("scenario"), run_b.get("scenario"))
    lab = _lab_changes(ia, ib, run_a.get("lab") or {}, run_b.get("lab") or {})
    return Comparability(ia, ib, tuple(scenario), tuple(lab))


def comparable_json(comp: Comparability | None) -> dict[str, Any] | None:
    """Scenario, --set and lab of both runs and what differs (None: not compared); the
    form ``compare --json``, ``report --format json`` and ``run --json`` share."""
    if comp is None:
        return None

    def side(i: RunIdentity) -> dict[str, Any]:
        return {"scenario_hash": i.scenario_hash, "base_scenario_hash": i.base_scenario_hash,
                "overrides": list(i.overrides), "lab": i.lab_name, "lab_kind": i.lab_kind.kind,
                "lab_throttled": i.lab_kind.throttled, "lab_fingerprint": i.lab_fingerprint}

    return {"same_scenario": comp.same_scenario, "same_lab": comp.same_lab,
            "a": side(comp.a), "b": side(comp.b),
            "scenario_changes": [dataclasses.asdict(c) for c in comp.scenario],
            "lab_changes": [dataclasses.asdict(c) for c in comp.lab]}
