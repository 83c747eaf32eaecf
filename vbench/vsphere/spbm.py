"""Storage policies (SPBM) of a vCenter: names resolved to profile ids, rules as text.

The policy service is a second SOAP endpoint of vCenter (``/pbm/sdk``; vcsim serves it
at ``/pbm``) that accepts the vCenter session: its cookie is passed both as the HTTP
cookie and as the ``vcSessionCookie`` SOAP header, which is how vCenter expects it.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyVmomi import SoapStubAdapter, pbm

from vbench.errors import LabError
from vbench.vsphere.connection import VSphereSession, tls_context
from vbench.vsphere.faults import fault_text

PBM_VERSION = "pbm.version.version11"
PBM_PATHS = ("/pbm/sdk", "/pbm")  # vCenter's, then vcsim's


@dataclass(frozen=True)
class StoragePolicy:
    name: str
    profile_id: str
    rules: tuple[str, ...]  # "VSAN.hostFailuresToTolerate=1", one per constraint property

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "id": self.profile_id, "rules": list(self.rules)}


def _cookie_value(cookie: str) -> str:
    """``vmware_soap_session="abc"; Path=/`` -> ``abc``."""
    first = cookie.split(";", 1)[0]
    return first.split("=", 1)[-1].strip().strip('"')


@contextlib.contextmanager
def _profile_manager(session: VSphereSession) -> Iterator[Any]:
    """The policy service's profile manager on a stub of its own, closed after use."""
    t = session.target
    cookie = getattr(session.stub, "cookie", "") or ""
    last: BaseException | None = None
    for path in PBM_PATHS:
        stub = SoapStubAdapter(
            host=t.host, port=t.port, path=path, version=PBM_VERSION,
            sslContext=tls_context(t), httpConnectionTimeout=t.timeout,
            requestContext={"vcSessionCookie": _cookie_value(cookie)},
        )  # fmt: skip
        stub.cookie = cookie
        try:
            content = pbm.ServiceInstance("ServiceInstance", stub).RetrieveContent()
        except Exception as exc:  # 404 on the other server's path: try the next one
            last = exc
            stub.DropConnections()
            continue
        try:
            yield content.profileManager
        finally:
            stub.DropConnections()
        return
    raise LabError(t.label, f"storage policy service (PBM) did not answer: {_text(last)}")


def _text(exc: BaseException | None) -> str:
    if exc is None:
        return "no answer"
    return fault_text(exc)


def rules_of(constraints: Any) -> tuple[str, ...]:
    """The constraints of a capability-based profile as ``namespace.id=value`` lines."""
    out: list[str] = []
    for sub in getattr(constraints, "subProfiles", None) or ():
        for cap in sub.capability or ():
            for con in cap.constraint or ():
                for prop in con.propertyInstance or ():
                    out.append(f"{cap.id.namespace}.{prop.id}={prop.value}")
    return tuple(out)


def storage_policies(session: VSphereSession) -> dict[str, StoragePolicy]:
    """Every storage requirement policy of the vCenter, by name."""

    def read() -> list[Any]:
        with _profile_manager(session) as manager:
            ids = manager.PbmQueryProfile(
                resourceType=pbm.profile.ResourceType(resourceType="STORAGE"),
                profileCategory="REQUIREMENT",
            )
            return list(manager.PbmRetrieveContent(profileIds=ids)) if ids else []

    try:  # an expired vCenter session is renewed (its new cookie used) and read again
        profiles = session.call(read)
    except LabError:
        raise
    except Exception as exc:
        raise LabError(session.target.label, f"reading storage policies: {_text(exc)}") from None
    return {
        p.name: StoragePolicy(p.name, p.profileId.uniqueId, rules_of(p.constraints))
        for p in profiles
    }


def missing_policy_text(name: str, known: Iterable[str]) -> str:
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"it has: {', '.join(names) or 'none'}"
    return f"no storage policy {name!r} ({hint})"


def resolve_policies(session: VSphereSession, names: Iterable[str]) -> dict[str, StoragePolicy]:
    """The policies named, by name; LabError (naming the vCenter and close names) for the
    first one the vCenter does not have."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    known = storage_policies(session)
    for name in wanted:
        if name not in known:
            raise LabError(session.target.label, missing_policy_text(name, known))
    return {n: known[n] for n in wanted}


def disk_policies(session: VSphereSession, disks: Iterable[tuple[str, int]]) -> dict[str, str]:
    """``"<vm moid>:<disk key>"`` -> profile id of the disks vCenter reports a policy for,
    in one call. Empty when the service cannot tell (vcsim keeps no association)."""
    keys = [f"{vm}:{key}" for vm, key in disks]
    if not keys:
        return {}
    refs = [pbm.ServerObjectRef(objectType="virtualDiskId", key=k) for k in keys]
    try:
        with _profile_manager(session) as manager:
            results = manager.PbmQueryAssociatedProfiles(entities=refs)
    except Exception:  # the testbed records what it can read; the run goes on
        return {}
    out = {}
    for r in results or ():
        ids = [p.uniqueId for p in getattr(r, "profileId", None) or ()]
        if ids:
            out[r.object.key] = ids[0]
    return out
