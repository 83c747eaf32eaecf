"""Connecting to real sshd guests: errors naming the guest, host-key policies, key auth,
jump hosts, and the pool's fan-out."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import LocalGuests, free_port
from vbench.errors import ConfigError, GuestError
from vbench.guest.ssh import Guest, GuestPool, GuestSpec

pytestmark = pytest.mark.integration


def _own_tcp_ports() -> set[int]:
    """Local ports of this process's TCP sockets (from /proc: no extra tool)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        if cols[9] in inodes:
            ports.add(int(cols[1].split(":")[1], 16))
    return ports


def _client_port(guest: Guest) -> int:
    return int(guest.run(["sh", "-c", "echo $SSH_CONNECTION"]).stdout.split()[1])


def _new_key(path: Path) -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True
    )
    return path


def test_key_auth_without_password(local_guests: LocalGuests) -> None:
    spec = local_guests[0]
    assert spec.password is None and spec.key_file
    with Guest(spec) as g:
        assert g.run(["id", "-un"]).stdout.strip() == os.environ.get("USER", "root")


def test_wrong_key_is_refused(local_guests: LocalGuests, tmp_path: Path) -> None:
    spec = dataclasses.replace(local_guests[0], key_file=str(_new_key(tmp_path / "k")))
    with pytest.raises(GuestError, match=r"^guest1 \(127\.0\.0\.2:\d+\): authentication failed"):
        Guest(spec).connect()


def test_closed_port_names_the_guest(local_guests: LocalGuests) -> None:
    port = free_port("127.0.0.3")
    ghost = GuestSpec("ghost", "127.0.0.3", port, connect_timeout=2)
    with GuestPool([*local_guests, ghost]) as pool:
        with pytest.raises(GuestError) as err:
            pool.connect_all()
        assert str(err.value) == f"ghost (127.0.0.3:{port}): connection refused"
        assert pool.get("guest1").connected  # the others still connected


def test_silent_server_times_out(local_guests: LocalGuests) -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.3", 0))
        srv.listen()
        spec = GuestSpec("mute", "127.0.0.3", srv.getsockname()[1], connect_timeout=0.4)
        started = time.monotonic()
        banner = r"^mute \(127\.0\.0\.3:\d+\): no SSH banner within 0\.4 s"
        with pytest.raises(GuestError, match=banner):
            Guest(spec).connect()
        # The spec's timeout ended the wait, not paramiko's own 15 s banner timeout.
        assert time.monotonic() - started < 15


def test_strict_policy_refuses_an_unknown_host_key(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    spec = dataclasses.replace(local_guests[0], known_hosts=str(known))
    with pytest.raises(GuestError, match=f"host key not in {known} .*accept-new"):
        Guest(spec).connect()
    assert not known.exists()


def test_accept_new_records_the_key_then_strict_accepts(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    known = tmp_path / "ssh" / "known_hosts"
    spec = dataclasses.replace(
        local_guests[0], known_hosts=str(known), host_key_policy="accept-new"
    )
    with Guest(spec) as g:
        g.run(["true"])
    port = local_guests.sshd.port
    assert known.read_text().startswith(f"[127.0.0.2]:{port} ssh-ed25519 ")
    with Guest(dataclasses.replace(spec, host_key_policy="strict")) as g:
        assert g.run(["echo", "ok"]).stdout == "ok\n"


@pytest.mark.parametrize("policy", ["strict", "accept-new"])
def test_changed_host_key_is_refused(
    local_guests: LocalGuests, tmp_path: Path, policy: str
) -> None:
    impostor = _new_key(tmp_path / "impostor").with_suffix(".pub").read_text().split()
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.2]:{local_guests.sshd.port} {impostor[0]} {impostor[1]}\n")
    spec = dataclasses.replace(local_guests[0], known_hosts=str(known), host_key_policy=policy)
    with pytest.raises(GuestError, match="host key CHANGED"):
        Guest(spec).connect()
    assert len(known.read_text().splitlines()) == 1  # nothing was added


def test_jump_host_carries_the_connection(local_guests: LocalGuests) -> None:
    guest1, guest2 = local_guests
    via = dataclasses.replace(guest2, jump=guest1)
    with Guest(guest2) as direct, Guest(via) as jumped:
        assert jumped.via == "guest1"
        assert jumped.run(["sh", "-c", "echo $SSH_CONNECTION"]).stdout.split()[2] == "127.0.0.3"
        direct_port, jumped_port = _client_port(direct), _client_port(jumped)
        own = _own_tcp_ports()
        assert direct_port in own  # control: a direct link is our own socket
        assert jumped_port not in own  # the jump host's sshd opened this one


def test_unreachable_jump_host_is_named(local_guests: LocalGuests) -> None:
    port = free_port("127.0.0.2")
    bastion = GuestSpec("bastion", "127.0.0.2", port, connect_timeout=2)
    spec = dataclasses.replace(local_guests[1], jump=bastion)
    with pytest.raises(GuestError) as err:
        Guest(spec).connect()
    assert str(err.value) == (
        f"guest2 (127.0.0.3:{local_guests.sshd.port}): via jump host "
        f"bastion (127.0.0.2:{port}): connection refused"
    )


def test_jump_host_that_cannot_reach_the_target(local_guests: LocalGuests) -> None:
    port = free_port("127.0.0.3")
    spec = GuestSpec("lost", "127.0.0.3", port, jump=local_guests[0], connect_timeout=2)
    with pytest.raises(GuestError, match=r"^lost .*guest1 .*cannot reach 127\.0\.0\.3"):
        Guest(spec).connect()


def test_pool_shares_a_pool_guest_as_jump_host(local_guests: LocalGuests) -> None:
    guest1, guest2 = local_guests
    with GuestPool([guest1, dataclasses.replace(guest2, jump=guest1)]) as pool:
        assert pool.get("guest2").run(["true"]).status == 0
        assert pool.get("guest1").connected  # opened as the jump, reused as a guest


def test_fan_out_runs_on_every_guest_in_parallel(guest_pool: GuestPool, tmp_path: Path) -> None:
    # Each guest's command says it has started, then waits until the other's has too: run
    # one after the other, the first would wait for the second until its timeout. (The
    # loopback guests share this file system; no guess of how long a command takes.)
    def both_at_once(g: Guest) -> str:
        script = (f"touch {tmp_path}/{g.name}; "
                  f"until [ -e {tmp_path}/guest1 ] && [ -e {tmp_path}/guest2 ]; do sleep 0.05; "
                  "done; echo $SSH_CONNECTION")  # fmt: skip
        return g.run(["sh", "-c", script], timeout=120).stdout.split()[2]

    out = guest_pool.fan_out(["guest1", "guest2"], both_at_once)
    assert out == {"guest1": "127.0.0.2", "guest2": "127.0.0.3"}


def test_fan_out_raises_after_the_others_finished(guest_pool: GuestPool) -> None:
    finished: list[str] = []
    lock = threading.Lock()

    def work(g: Guest) -> str:
        if g.name == "guest1":
            g.run(["false"])
        g.run(["sleep", "0.3"])
        with lock:
            finished.append(g.name)
        return g.name

    with pytest.raises(GuestError, match=r"^guest1 .*`false` exited 1"):
        guest_pool.fan_out(["guest1", "guest2"], work)
    assert finished == ["guest2"]


def test_pool_rejects_unknown_and_duplicate_names(local_guests: LocalGuests) -> None:
    with pytest.raises(ConfigError, match="defined twice"):
        GuestPool([local_guests[0], local_guests[0]])
    with GuestPool(local_guests) as pool, pytest.raises(ConfigError, match="unknown guest 'x'"):
        pool.get("x")
    assert [g.name for g in GuestPool(local_guests).guests()] == ["guest1", "guest2"]


def test_password_is_not_in_repr() -> None:
    spec = GuestSpec("g", "127.0.0.9", password="hunter2-secret")
    assert "hunter2" not in repr(spec)
    assert "hunter2" not in repr(Guest(spec))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("host_key_policy", "yolo", "host_key_policy 'yolo'"), ("port", 0, "port 0")],
)
def test_bad_spec_is_a_config_error(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GuestSpec("g", "127.0.0.9", **{field: value})  # type: ignore[arg-type]
