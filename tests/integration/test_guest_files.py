"""File transfer and scratch-folder handling on a real sshd guest (SFTP)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from vbench.errors import GuestError
from vbench.guest.ssh import Guest, GuestPool

pytestmark = pytest.mark.integration


@pytest.fixture
def guest(guest_pool: GuestPool) -> Guest:
    return guest_pool.get("guest1")


@pytest.fixture
def remote_dir(local_guests: LocalGuests) -> str:
    """A fresh folder below the guests' workdir (the remote side is this machine)."""
    return f"{local_guests.sshd.workdir}/{uuid.uuid4().hex[:8]}"


def test_put_creates_parents_and_keeps_mode(guest: Guest, tmp_path: Path, remote_dir: str) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o750)
    guest.put(script, f"{remote_dir}/a/b/job.sh")
    assert guest.run([f"{remote_dir}/a/b/job.sh"]).stdout == "ran\n"
    assert guest.run(["stat", "-c", "%a", f"{remote_dir}/a/b/job.sh"]).stdout.strip() == "750"


def test_put_and_get_directory_round_trip(guest: Guest, tmp_path: Path, remote_dir: str) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "one.txt").write_text("1")
    (src / "sub" / "two.bin").write_bytes(bytes(range(256)) * 40)
    guest.put(src, f"{remote_dir}/tree")
    back = tmp_path / "back"
    guest.get(f"{remote_dir}/tree", back)
    assert (back / "one.txt").read_text() == "1"
    assert (back / "sub" / "two.bin").read_bytes() == bytes(range(256)) * 40


def test_put_text_and_read_text(guest: Guest, tmp_path: Path, remote_dir: str) -> None:
    text = "naïve ünïcode\nline 2\n"
    guest.put_text(text, f"{remote_dir}/x/t.txt", mode=0o600)
    assert guest.read_text(f"{remote_dir}/x/t.txt") == text
    assert guest.run(["stat", "-c", "%a", f"{remote_dir}/x/t.txt"]).stdout.strip() == "600"
    guest.get(f"{remote_dir}/x/t.txt", tmp_path / "copy" / "t.txt")
    assert (tmp_path / "copy" / "t.txt").read_text() == text


def test_missing_remote_file_names_the_guest(guest: Guest, tmp_path: Path, remote_dir: str) -> None:
    with pytest.raises(GuestError, match=r"^guest1 \(127\.0\.0\.2:\d+\): get .*No such file"):
        guest.get(f"{remote_dir}/absent", tmp_path / "absent")
    with pytest.raises(GuestError, match="no such local file"):
        guest.put(tmp_path / "absent", f"{remote_dir}/absent")


def test_mkdir_and_remove_inside_workdir(guest: Guest, remote_dir: str) -> None:
    guest.mkdir(f"{remote_dir}/deep/er")
    guest.put_text("x", f"{remote_dir}/deep/er/f")
    guest.remove(remote_dir)
    assert not Path(remote_dir).exists()


@pytest.mark.parametrize("path", ["/", "", "  ", "/etc", "relative/path", "{workdir}/../etc"])
def test_remove_refuses_paths_outside_workdir(
    guest: Guest, local_guests: LocalGuests, path: str
) -> None:
    with pytest.raises(GuestError, match="refusing to remove"):
        guest.remove(path.format(workdir=local_guests.sshd.workdir))
    assert Path("/etc").is_dir()
