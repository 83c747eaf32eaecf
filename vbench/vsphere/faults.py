"""vSphere faults as one readable line: what failed and why, without a SOAP dump."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vbench.lazy import lazy_module

if TYPE_CHECKING:
    from pyVmomi import vmodl
else:
    vmodl = lazy_module("pyVmomi", "vmodl")

# Fields every fault has; they say nothing about this one.
_COMMON = {"dynamicType", "dynamicProperty", "msg", "faultCause", "faultMessage"}


def fault_name(fault: Any) -> str:
    return str(getattr(fault, "_wsdlName", None) or type(fault).__name__.rsplit(".", 1)[-1])


def _ref_text(value: Any) -> str:
    moid = getattr(value, "_moId", None)
    return f"{type(value).__name__.rsplit('.', 1)[-1]} {moid}" if moid else str(value)


def _specific(fault: Any) -> str | None:
    name = fault_name(fault)
    g = lambda attr: getattr(fault, attr, None)  # noqa: E731
    if name == "InvalidLogin":
        return "wrong user name or password"
    if name == "NotAuthenticated":
        return "the session is not authenticated (expired or terminated)"
    if name == "NoPermission":
        privs = g("privilegeId") or ", ".join(
            p for m in (g("missingPrivileges") or ()) for p in (m.privileges or ())
        )
        obj = g("object")
        where = f" on {_ref_text(obj)}" if obj is not None else ""
        return f"permission denied: missing privilege {privs or '(unnamed)'}{where}"
    if name == "DuplicateName":
        return f"the name {g('name')!r} already exists"
    if name in ("InvalidArgument", "InvalidRequest") and g("invalidProperty"):
        return f"invalid argument {g('invalidProperty')}"
    if name == "InvalidPowerState":
        return f"the VM is {g('existingState')} (needs {g('requestedState') or 'another state'})"
    if name == "ManagedObjectNotFound":
        return f"{_ref_text(g('obj'))} no longer exists"
    return None


def _fields(fault: Any) -> str:
    parts = []
    try:
        props = fault._GetPropertyList()
    except AttributeError:
        return ""
    for p in props:
        if p.name in _COMMON:
            continue
        value = getattr(fault, p.name, None)
        if value in (None, "", [], ()):
            continue
        if isinstance(value, str | int | float | bool):
            parts.append(f"{p.name}={value}")
        elif getattr(value, "_moId", None):
            parts.append(f"{p.name}={_ref_text(value)}")
    return ", ".join(parts)


def fault_text(fault: BaseException | Any) -> str:
    """``DuplicateName: the name 'vm1' already exists`` — the fault's type, then the most
    specific explanation: vCenter's own message when it has one, else its fields."""
    if not isinstance(fault, vmodl.MethodFault):
        text = str(fault).strip() or type(fault).__name__
        return text.splitlines()[0]
    name = fault_name(fault)
    msg = (getattr(fault, "msg", None) or "").strip()
    # vcsim puts the Go type name ("*types.DuplicateName") where vCenter puts prose.
    if msg.startswith("*types.") or msg == name:
        msg = ""
    for m in getattr(fault, "faultMessage", None) or ():
        if not msg and getattr(m, "message", None):
            msg = m.message.strip()
    detail = _specific(fault) or msg or _fields(fault)
    if msg and detail != msg and msg not in detail:
        detail = f"{detail} ({msg})"
    text = f"{name}: {detail}" if detail else name
    return text.splitlines()[0]
