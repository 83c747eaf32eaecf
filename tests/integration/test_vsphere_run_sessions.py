"""The vCenter sessions of a killed run, ended afterwards (issue 28, item 9), against a
real vCenter simulator: each login of a run's session pool is journaled by a digest of
its key (never the key: the simulator's key is also its cookie); a session left logged
in (the process gone without a logout) is found in the SessionManager's list by that
digest and terminated from another session; one already gone is left alone."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_vsphere_connect import _target
from tests.vcsim import VcsimServer
from vbench.vsphere.connection import SessionPool, VSphereSession, key_digest, server_thumbprint
from vbench.vsphere.journal import Journal
from vbench.vsphere.run_sessions import end_sessions, journal_logins, recorded_sessions


def pool(server: VcsimServer) -> SessionPool:
    pin = server_thumbprint(server.host, server.port)
    return SessionPool({"vc1": _target(server, thumbprint=pin, keepalive=0)})


def listed(session: VSphereSession) -> set[str]:
    return {str(u.key) for u in session.content.sessionManager.sessionList}


def abandon(session: VSphereSession) -> None:
    """What kill -9 leaves: no logout, the connections simply gone."""
    session.stub.DropConnections()


def test_a_killed_runs_sessions_are_ended_by_what_its_journal_recorded(
    vcsim: VcsimServer, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "vsphere-journal.jsonl")
    run = pool(vcsim)
    first = run.get("vc1")  # the preflight's login, before the journal exists
    run.watch_logins(journal_logins(journal))
    killed_key = first.session_key
    assert killed_key is not None
    recorded = recorded_sessions(journal.read())
    assert [(s.vcenter, s.key_sha256) for s in recorded] == [("vc1", key_digest(killed_key))]
    assert killed_key not in journal.path.read_text(), "the key itself is never written"
    abandon(first)

    with pool(vcsim) as cleanup:
        own = cleanup.get("vc1")
        assert killed_key in listed(own)
        result = end_sessions(cleanup.get, recorded)
        assert [s.key_sha256 for s in result.ended] == [key_digest(killed_key)]
        assert result.errors == ()
        assert killed_key not in listed(own) and own.session_key in listed(own)
        # Again: nothing left to end, nothing refused.
        again = end_sessions(cleanup.get, recorded)
        assert again.ended == () and again.errors == ()


def test_a_login_after_an_expiry_is_journaled_too(vcsim: VcsimServer, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "vsphere-journal.jsonl")
    run = pool(vcsim)
    run.watch_logins(journal_logins(journal))
    session = run.get("vc1")
    old = session.session_key
    with pool(vcsim) as admin:  # the session expires: vCenter forgets it
        admin.get("vc1").content.sessionManager.TerminateSession(sessionId=[old])
    session.call(lambda: session.content.rootFolder.childEntity)  # logs in again
    new = session.session_key
    assert new != old and session.relogins == 1
    assert [s.key_sha256 for s in recorded_sessions(journal.read())] == [
        key_digest(str(old)), key_digest(str(new))]
    run.close()
    # A run that ended normally logged out: nothing to end.
    with pool(vcsim) as cleanup:
        assert end_sessions(cleanup.get, recorded_sessions(journal.read())).ended == ()
