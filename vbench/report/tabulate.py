"""Environment and testbed records as plain tables of text (the report's environment and
testbed sections): scalars in one ``item | value`` table, a mapping of records or a list
of records as a table of its own, a moment shown as a time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vbench.report.data import MISSING, finite, fmt_num, fmt_time


def scalar_text(v: Any) -> str:
    """A table cell for an environment/testbed value of any shape."""
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return fmt_num(v)
    if isinstance(v, list | tuple) and all(not isinstance(i, dict | list) for i in v):
        return ", ".join(scalar_text(i) for i in v)
    if isinstance(v, dict | list | tuple):
        return json.dumps(v, sort_keys=True, default=str)
    return str(v)


# ------------------------------------------------------ environment / testbed


@dataclass(frozen=True)
class Table:
    """A plain table of text cells (environment and testbed sections)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


# Keys whose number is a moment (epoch seconds), shown as a time: `recorded_at`, …
_MOMENT_KEYS = ("_at", "started", "ended", "timestamp", "recorded", "boot_time")
# Epoch seconds from 2001 to 2100: a number outside is not taken for a moment.
_EPOCH_RANGE = (1e9, 4.2e9)


def keyed_text(key: str, v: Any) -> str:
    """:func:`scalar_text`, with a moment (``controller.recorded_at``) shown as a local
    time instead of ``1,795,452,866``."""
    x = finite(v)
    name = key.rsplit(".", 1)[-1].lower()
    if (x is not None and not isinstance(v, bool) and (name == "at" or name.endswith(_MOMENT_KEYS))
            and _EPOCH_RANGE[0] <= x <= _EPOCH_RANGE[1]):
        return fmt_time(x, zone=True)
    if isinstance(v, list | tuple) and v and all(isinstance(i, Mapping) for i in v):
        return "; ".join(_record_text(i) for i in v)
    return scalar_text(v)


def _record_text(item: Mapping[str, Any]) -> str:
    """A record inside a cell: "Past Day (period_s=300, level=1)"."""
    name = item.get("name") or item.get("device") or item.get("label") or item.get("id")
    rest = ", ".join(f"{k}={scalar_text(x)}" for k, x in item.items()
                     if k not in ("name", "device", "label", "id") and not isinstance(x, dict))
    return f"{name} ({rest})" if name and rest else str(name or rest)


def _flatten(obj: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.extend(_flatten(v, key + "."))
        else:
            out.append((key, keyed_text(key, v)))
    return out


def _records_table(title: str, records: list[tuple[str | None, Mapping[str, Any]]]) -> Table:
    """Rows of dicts → a table over the union of their keys (first-seen order)."""
    columns: dict[str, None] = {}
    flat = [(name, dict(_flatten(rec))) for name, rec in records]
    for _, rec in flat:
        columns.update(dict.fromkeys(rec))
    named = any(name is not None for name, _ in flat)
    head = (("name",) if named else ()) + tuple(columns)
    rows = tuple(
        ((name or "",) if named else ()) + tuple(rec.get(c, MISSING) for c in columns)
        for name, rec in flat
    )
    return Table(title, head, rows)


def tabulate(obj: Mapping[str, Any] | None, title: str) -> list[Table]:
    """Turn a nested environment/testbed dict into readable tables.

    Scalars (and small nested dicts) go into one ``item | value`` table; a dict of
    dicts (e.g. guests by name) and a list of dicts (e.g. hosts) each become a table
    with one row per entry.
    """
    if not obj:
        return []
    general: list[tuple[str, str]] = []
    tables: list[Table] = []
    for key, value in obj.items():
        if (
            isinstance(value, Mapping)
            and value
            and all(isinstance(v, Mapping) for v in value.values())
        ):
            tables.append(_records_table(str(key), [(str(k), v) for k, v in value.items()]))
        elif (
            isinstance(value, list | tuple) and value and all(isinstance(v, Mapping) for v in value)
        ):
            tables.append(_records_table(str(key), [(None, v) for v in value]))
        elif isinstance(value, Mapping):
            general.extend(_flatten(value, f"{key}.") if value else [(str(key), MISSING)])
        else:
            general.append((str(key), keyed_text(str(key), value)))
    head = [Table(title, ("item", "value"), tuple(general))] if general else []
    return head + tables
