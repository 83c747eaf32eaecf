"""Lab hygiene and disturbances, as a run's testbed recorded them (engine/hygiene.py):
the verdict's warnings and the testbed section's lines. Reads plain JSON only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

ACTIONS = {"flag": "disturbed", "fail": "failed, disturbed", "retried": "run again, disturbed",
           "unread": "not watched"}
# Whether the disturbed attempt's figures are in the statistics, said with it.
COUNTED = {"flag": "kept in the statistics", "fail": "left out of the statistics",
           "retried": "that attempt is not stored"}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


Statuses = Mapping[tuple[int, int], Any]  # (point, trial) -> the stored trial's status


def statuses_of(trials: Iterable[Mapping[str, Any]]) -> dict[tuple[int, int], Any]:
    return {(int(t["point"]), int(t["trial"])): t.get("status") for t in trials}


def _counted(d: Mapping[str, Any], statuses: Statuses | None) -> str | None:
    """Whether the attempt's figures are in the statistics: a flagged (kept) trial is,
    unless its own record says it did not succeed (vbench/report/disturbed.py reads it
    the same way)."""
    action = str(d.get("action"))
    if action != "flag" or statuses is None:
        return COUNTED.get(action)
    try:
        status = statuses.get((int(d.get("point") or 0), int(d.get("trial") or 0)))
    except (TypeError, ValueError):
        return COUNTED[action]
    if status == "ok":
        return COUNTED[action]
    said = ("the trial is not stored" if status is None else
            "the trial failed" if status == "failed" else f"the trial is {status}")
    return f"{said}: not in the statistics"


def _findings(testbed: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [f for f in testbed.get("hygiene") or () if isinstance(f, Mapping)]


def disturbance_line(d: Mapping[str, Any], statuses: Statuses | None = None) -> str:
    """"point 1 trial 2 disturbed: vMotion of guest1 to esx2 at 12:03:04, 21 s into the
    steady window (kept in the statistics)"; ``statuses``: the stored trials' (a flagged
    trial that failed for its own reason is not in the statistics)."""
    action = str(d.get("action"))
    what = ACTIONS.get(action, "disturbed")
    said = _counted(d, statuses)
    counted = f" ({said})" if said else ""
    return (f"point {int(d.get('point') or 0) + 1} trial {d.get('trial')} {what}: "
            f"{d.get('text')}{counted}")


def hygiene_warnings(run: Mapping[str, Any], trials: Iterable[Mapping[str, Any]] | None = None
                     ) -> list[str]:
    """One warning for the lab's hygiene findings that were not ok, and one per disturbed
    trial (the verdict's warnings carry them); ``trials``: the stored trials."""
    statuses = None if trials is None else statuses_of(trials)
    testbed = _map(run.get("testbed"))
    bad = [f for f in _findings(testbed) if f.get("level") in ("warn", "fail")]
    out = []
    if bad:
        out.append(f"lab hygiene: {len(bad)} finding{'s' if len(bad) != 1 else ''} not ok "
                   "before the run: "
                   + "; ".join(f"{f.get('check')} {f.get('target')}: {f.get('detail')}"
                               for f in bad))
    out += [disturbance_line(d, statuses) for d in testbed.get("disturbances") or ()
            if isinstance(d, Mapping)]
    return out


def hygiene_lines(testbed: Mapping[str, Any] | None, statuses: Statuses | None = None
                  ) -> list[str]:
    """The testbed section's lines: a count per level, each finding not ok, each
    disturbance (``statuses``: as for :func:`disturbance_line`)."""
    testbed = _map(testbed)
    found = _findings(testbed)
    lines = []
    if found:
        n = {lv: sum(f.get("level") == lv for f in found) for lv in ("ok", "warn", "fail")}
        lines.append(f"  lab hygiene: {n['ok']} ok, {n['warn']} warn, {n['fail']} fail")
        lines += [f"    {f.get('level')}: {f.get('check')} {f.get('target')}: {f.get('detail')}"
                  for f in found if f.get("level") != "ok"]
    for d in testbed.get("disturbances") or ():
        if isinstance(d, Mapping):
            lines.append(f"  {disturbance_line(d, statuses)}")
    return lines
