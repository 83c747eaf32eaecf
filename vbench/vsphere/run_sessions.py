"""The vCenter sessions of a run, found again after the run was killed.

A run journals each login (``session`` entries in its vsphere journal: the vCenter, the
user and a SHA-256 of the session key — never the key, which a simulator also takes as
its cookie). A run that ends normally logs out. After ``kill -9`` its sessions stay
logged in until vCenter's idle timeout; ``vbench cleanup RUN`` ends the ones still
listed by the SessionManager (``TerminateSession``), from a session of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vbench.errors import VbenchError
from vbench.vsphere.connection import VSphereSession, key_digest
from vbench.vsphere.faults import fault_text
from vbench.vsphere.journal import Journal

SESSION_EVENT = "session"


def journal_logins(journal: Journal) -> Callable[[VSphereSession], None]:
    """The ``on_login`` of a run's session pool: each login is journaled."""

    def record(session: VSphereSession) -> None:
        mark = session.session_mark()
        if mark is not None:
            journal.write(SESSION_EVENT, vcenter=session.target.name, **mark)

    return record


@dataclass(frozen=True)
class RunSession:
    vcenter: str
    user: str
    key_sha256: str


def recorded_sessions(entries: Iterable[Mapping[str, Any]]) -> list[RunSession]:
    """The sessions a journal records, each once, in login order."""
    seen: dict[tuple[str, str], RunSession] = {}
    for e in entries:
        if e.get("event") == SESSION_EVENT and e.get("vcenter") and e.get("key_sha256"):
            s = RunSession(str(e["vcenter"]), str(e.get("user") or ""), str(e["key_sha256"]))
            seen.setdefault((s.vcenter, s.key_sha256), s)
    return list(seen.values())


@dataclass(frozen=True)
class EndedSessions:
    ended: tuple[RunSession, ...]
    errors: tuple[str, ...]


def end_sessions(
    get_session: Callable[[str], VSphereSession], recorded: Iterable[RunSession]
) -> EndedSessions:
    """End each recorded session vCenter still lists (one already gone is left alone)."""
    ended: list[RunSession] = []
    errors: list[str] = []
    by_vc: dict[str, list[RunSession]] = {}
    for s in recorded:
        by_vc.setdefault(s.vcenter, []).append(s)
    for vc, wanted in by_vc.items():
        try:
            session = get_session(vc)
            manager = session.content.sessionManager
            own = session.session_key
            live = {key_digest(str(u.key)): str(u.key)
                    for u in session.call(lambda m=manager: m.sessionList) or ()
                    if str(u.key) != own}
            keys = [live[s.key_sha256] for s in wanted if s.key_sha256 in live]
            if keys:
                session.call(lambda m=manager, k=keys: m.TerminateSession(sessionId=k))
            ended += [s for s in wanted if s.key_sha256 in live]
        except VbenchError as exc:
            errors.append(f"vcenter {vc}: cannot end the run's sessions: {exc}")
        except Exception as exc:  # a vCenter fault (no privilege, …): said, not raised
            errors.append(f"vcenter {vc}: cannot end the run's sessions: {fault_text(exc)}")
    return EndedSessions(tuple(ended), tuple(errors))


def end_left_sessions(lab: Any, run_dir: Path) -> EndedSessions | None:
    """End the sessions the run in ``run_dir`` left logged in (`vbench cleanup RUN`);
    None while its process still runs on this machine (they are in use then)."""
    from vbench.vsphere.cleanup import journal_says_alive
    from vbench.vsphere.connection import SessionPool

    recorded = recorded_sessions(Journal.in_run_dir(run_dir).read())
    if not recorded:
        return EndedSessions((), ())
    if journal_says_alive(run_dir):
        return None
    with SessionPool.for_lab(lab) as pool:
        return end_sessions(pool.get, recorded)


def ended_lines(result: EndedSessions | None) -> list[tuple[str, bool]]:
    """What cleanup says of it: (line, is an error)."""
    if result is None:
        return [("vCenter sessions: the run's process still runs here, its sessions are "
                 "left alone", False)]
    return [*((f"ended vCenter session of {s.user or 'the run'} on {s.vcenter}", False)
              for s in result.ended),
            *((f"error: {e}", True) for e in result.errors)]
