"""What makes two runs comparable, recorded with every run: the lab it ran in (a
fingerprint of the lab's resolved, secret-free description and of its kind), the
scenario as it ran (a hash after ``--set``), the ``--set`` overrides themselves and the
hash of the scenario file without them.

Everything here is computed from the documents a run stores (the resolved lab and
scenario), so a run stored before these were recorded still gets its lab kind and its
scenario hash when it is read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Lab kinds, from the most to the least artificial.
SIMULATED = "simulated"  # a vCenter simulator (vcsim) that `vbench lab up` starts
LOCAL = "local"  # loopback guests served by the local sshd (no vCenter)
VCENTER = "vcenter"  # a real vCenter Server
SSH = "ssh"  # static SSH guests only (no vCenter, no local lab)

_KIND_TEXT = {
    SIMULATED: "simulated vCenter (vcsim)",
    LOCAL: "local loopback",
    VCENTER: "real vCenter",
    SSH: "static SSH guests",
}


def canonical_json(obj: Any) -> str:
    """One text per value: keys sorted, no spaces, non-JSON values as strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def _digest(obj: Any, length: int) -> str:
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


@dataclass(frozen=True)
class LabKind:
    kind: str  # simulated | local | vcenter | ssh
    throttled: bool  # a simulator with added API latency (method_delay)

    @property
    def text(self) -> str:
        return _KIND_TEXT.get(self.kind, self.kind) + (", throttled" if self.throttled else "")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def lab_kind(lab: Mapping[str, Any] | None) -> LabKind:
    """The kind of a lab from its resolved description (as ``Lab.redacted()`` gives it
    and runs store it): any simulated vCenter makes the lab simulated, throttled when a
    simulator delays API methods."""
    lab = _map(lab)
    vcenters = [_map(v) for v in _map(lab.get("vcenters")).values()]
    sims = [_map(v.get("simulator")) for v in vcenters if v.get("simulator") is not None]
    if sims:
        return LabKind(SIMULATED, any(_map(s.get("method_delay")) for s in sims))
    if vcenters:
        return LabKind(VCENTER, False)
    if lab.get("local") is not None:
        return LabKind(LOCAL, False)
    return LabKind(SSH, False)


def lab_fingerprint(lab: Mapping[str, Any] | None) -> str:
    """16 hex digits over the lab's description and kind: two runs with the same
    fingerprint ran in the same lab, described the same way. Where its runs are
    published (``publish:``) is not the lab: left out."""
    kind = lab_kind(lab)
    described = {k: v for k, v in _map(lab).items() if k != "publish"}
    return _digest({"kind": kind.kind, "throttled": kind.throttled, "lab": described}, 16)


def scenario_hash(scenario: Mapping[str, Any] | None) -> str:
    """12 hex digits over the whole resolved scenario (after ``--set``), canonical form."""
    return _digest(dict(_map(scenario)), 12)


@dataclass(frozen=True)
class RunIdentity:
    """What a run is compared on, as stored (or computed for an older run)."""

    lab_name: str
    lab_kind: LabKind
    lab_fingerprint: str
    scenario_hash: str
    base_scenario_hash: str | None  # the scenario file without --set (None: unknown)
    overrides: tuple[str, ...]  # the --set arguments, as given

    @property
    def lab_text(self) -> str:
        """``local (local loopback)``."""
        return f"{self.lab_name or '-'} ({self.lab_kind.text})"

    @property
    def variant(self) -> tuple[str, str]:
        """Runs with the same variant ran the same scenario in the same lab."""
        return (self.lab_fingerprint, self.scenario_hash)


def identity_of(run: Mapping[str, Any]) -> RunIdentity:
    """From a stored run (a store row as a mapping); values missing from runs stored
    before schema 4 are computed from the stored documents (overrides: none known). The
    lab fingerprint is computed from the stored lab whenever there is one: runs stored by
    an older vbench recorded a fingerprint without the lab's kind, and the same lab must
    not look like two."""
    lab = _map(run.get("lab"))
    scenario = _map(run.get("scenario"))
    overrides = run.get("overrides") or ()
    stored_print = run.get("lab_fingerprint")
    return RunIdentity(
        lab_name=str(lab.get("name") or ""),
        lab_kind=lab_kind(lab),
        lab_fingerprint=lab_fingerprint(lab) if lab or not stored_print else str(stored_print),
        scenario_hash=str(run.get("scenario_hash") or scenario_hash(scenario)),
        base_scenario_hash=run.get("base_scenario_hash"),
        overrides=tuple(str(o) for o in overrides),
    )
