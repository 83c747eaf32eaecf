"""Running commands on a real sshd guest: output, quoting, exit status, timeouts, threads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from vbench.errors import CommandFailed, ConfigError, GuestError
from vbench.guest.ssh import GuestPool

pytestmark = pytest.mark.integration

HOSTILE = [
    "two words",
    "it's",
    '"double"',
    "$(touch {canary})",
    "`touch {canary}`",
    "; touch {canary}",
    "a && touch {canary}",
    "line1\nline2",
    "*",
    "$HOME",
    "back\\slash",
    "-n",
    "",
]


def _live(pool: GuestPool, guest: str, needle: str) -> list[str]:
    """Remote processes (not zombies) whose command line contains needle."""
    out = pool.get(guest).run(["ps", "-e", "-o", "stat=,args="]).stdout
    return [ln for ln in out.splitlines() if needle in ln and not ln.lstrip().startswith("Z")]


def test_run_returns_stdout_stderr_and_status(guest_pool: GuestPool) -> None:
    res = guest_pool.get("guest1").run(["sh", "-c", "echo out; echo err >&2"])
    assert (res.status, res.stdout, res.stderr) == (0, "out\n", "err\n")
    assert 0 < res.seconds < 5


def test_run_reaches_the_guest_address(guest_pool: GuestPool) -> None:
    res = guest_pool.get("guest2").run(["sh", "-c", "echo $SSH_CONNECTION"])
    assert res.stdout.split()[2] == "127.0.0.3"


def test_hostile_arguments_arrive_verbatim(guest_pool: GuestPool, tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    values = [v.format(canary=canary) for v in HOSTILE]
    res = guest_pool.get("guest1").run(["printf", r"%s\0", *values])
    assert res.stdout.split("\0")[:-1] == values
    assert not canary.exists()


def test_hostile_cwd_and_env_stay_quoted(guest_pool: GuestPool, tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    odd = tmp_path / "dir with 'quote' and $(touch x)"
    odd.mkdir()
    value = f"$(touch {canary}); 'x' \"y\""
    res = guest_pool.get("guest1").run(
        ["sh", "-c", 'pwd; printf "%s" "$V"'], cwd=str(odd), env={"V": value}
    )
    assert res.stdout == f"{odd}\n{value}"
    assert not canary.exists()


def test_invalid_env_name_is_refused(guest_pool: GuestPool) -> None:
    with pytest.raises(ConfigError, match="environment variable name"):
        guest_pool.get("guest1").run(["true"], env={"A;touch x": "1"})


def test_stdin_is_fed_then_closed(guest_pool: GuestPool) -> None:
    g = guest_pool.get("guest1")
    assert g.run(["cat"], stdin="hello\nworld\n").stdout == "hello\nworld\n"
    # Without stdin the command sees EOF instead of hanging.
    assert g.run(["cat"], timeout=5).stdout == ""


def test_nonzero_exit_raises_command_failed(guest_pool: GuestPool) -> None:
    g = guest_pool.get("guest1")
    with pytest.raises(CommandFailed) as err:
        g.run(["sh", "-c", "echo oops >&2; exit 3"])
    assert err.value.status == 3
    assert err.value.target == f"guest1 (127.0.0.2:{g.spec.port})"
    assert "oops" in str(err.value)
    assert g.run(["sh", "-c", "exit 3"], check=False).status == 3


def test_lines_stream_before_the_command_ends(guest_pool: GuestPool) -> None:
    seen: list[tuple[str, float]] = []
    res = guest_pool.get("guest1").run(
        ["sh", "-c", "echo one; sleep 0.8; echo two; printf tail"],
        on_line=lambda line: seen.append((line, time.monotonic())),
    )
    done = time.monotonic()
    assert [line for line, _ in seen] == ["one", "two", "tail"]
    assert done - seen[0][1] > 0.5  # "one" arrived while the command still ran
    assert res.stdout == "one\ntwo\ntail"


def test_timeout_kills_the_remote_process_group(guest_pool: GuestPool) -> None:
    g = guest_pool.get("guest1")
    started = time.monotonic()
    with pytest.raises(GuestError, match=r"timed out after 0.5 s"):
        g.run(["sh", "-c", "sleep 71.25 & sleep 71.5; echo never"], timeout=0.5)
    # It answered on its timeout, not when the command would have ended by itself.
    assert time.monotonic() - started < 71
    assert _live(guest_pool, "guest1", "sleep 71.") == []


def test_run_script_runs_sh(guest_pool: GuestPool) -> None:
    res = guest_pool.get("guest1").run_script("x=4\necho $((x * 2))\n")
    assert res.stdout == "8\n"


def test_which_finds_tools(guest_pool: GuestPool) -> None:
    g = guest_pool.get("guest1")
    assert g.which("sh") in ("/bin/sh", "/usr/bin/sh")
    assert g.which("no-such-tool-xyz") is None


def test_concurrent_runs_share_one_connection(guest_pool: GuestPool) -> None:
    g = guest_pool.get("guest1")
    # More calls at once than sshd's default MaxSessions: the guest queues them.
    with ThreadPoolExecutor(16) as ex:
        outs = list(ex.map(lambda i: g.run(["sh", "-c", f"sleep 0.1; echo {i}"]).stdout, range(24)))
    assert outs == [f"{i}\n" for i in range(24)]


def test_clock_offset_is_small_on_loopback(guest_pool: GuestPool) -> None:
    offset, rtt = guest_pool.get("guest1").clock_offset(rounds=3)
    assert abs(offset) < 0.5
    assert 0 < rtt < 1


@pytest.mark.timeout(30)
def test_large_stdin_does_not_deadlock(guest_pool: GuestPool) -> None:
    # More than the SSH window in both directions: cat answers while still reading.
    data = "0123456789abcde\n" * 300_000
    res = guest_pool.get("guest1").run(["cat"], stdin=data, timeout=60)
    assert len(res.stdout) == len(data) and res.stdout == data


def test_many_quick_commands_never_break_the_connection(
    guest_pool: GuestPool, local_guests: LocalGuests
) -> None:
    # Commands that end at once: nothing the controller sends may follow the channel's
    # CLOSE, or sshd drops the whole connection ("... referred to nonexistent channel"),
    # failing every command in flight on it. Commands without stdin read /dev/null, so no
    # EOF is ever sent; a command fed stdin ends only after the shell around it has read
    # that stdin to its EOF, even when the command itself stops reading early (`head`
    # with exactly its input, `true` with input it never reads).
    log = local_guests.sshd.home / "lab" / "sshd.log"
    before = log.read_text(errors="replace").count("nonexistent channel")
    g = guest_pool.get("guest1")
    with ThreadPoolExecutor(max_workers=6) as pool:
        quick = list(pool.map(lambda _i: g.run(["true"]), range(300)))
        fed = list(pool.map(lambda _i: g.run(["sh", "-c", "cat >/dev/null"], stdin="x" * 70_000),
                            range(60)))  # fmt: skip
        early = list(pool.map(
            lambda i: g.run(["head", "-c", "5000"], stdin="x" * 5000) if i % 2
            else g.run(["sh", "-c", "exit 3"], stdin="x" * 300_000, check=False),
            range(400)))  # fmt: skip
    assert all(r.status == 0 for r in quick + fed)
    assert all(r.status == (0 if i % 2 else 3) for i, r in enumerate(early))
    assert all(r.stdout == "x" * 5000 for r in early[1::2])
    assert g.run(["echo", "still here"]).stdout == "still here\n"
    assert log.read_text(errors="replace").count("nonexistent channel") == before


@pytest.fixture
def chatty_login(local_guests: LocalGuests) -> Iterator[None]:
    """The guests' login shell prints a greeting first (a noisy ~/.bashrc)."""
    rc = local_guests.sshd.home / "lab" / "home" / ".bashrc"
    rc.write_text("echo 'welcome to the lab'\n")
    yield
    rc.unlink()


def test_chatty_login_shell_keeps_timeouts_working(
    guest_pool: GuestPool, chatty_login: None
) -> None:
    g = guest_pool.get("guest2")
    assert g.run(["echo", "x"]).stdout == "welcome to the lab\nx\n"
    with pytest.raises(GuestError, match="timed out"):
        g.run(["sh", "-c", "sleep 72.5; true"], timeout=0.4)
    assert _live(guest_pool, "guest2", "sleep 72.5") == []
    assert abs(g.clock_offset(rounds=2)[0]) < 0.5
