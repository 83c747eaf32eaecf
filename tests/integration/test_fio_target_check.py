"""fio's named target checked in the guest before anything is written (issue: data disks
on cloned VMs): a device that is not there, a folder, or a device holding a mounted file
system when the job writes, each refused naming the guest. The check only reads; no test
here runs fio against a device."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest

from tests.conftest import LocalGuests
from vbench.errors import GuestError
from vbench.guest.ssh import Guest
from vbench.workloads.fio.disks import DiskRef, resolve_in
from vbench.workloads.fio.target import check, fio_paths, job_writes, parse_state, problem

pytestmark = pytest.mark.integration


def mounted_block_device() -> tuple[str, str]:
    """A block device of this machine holding a mounted file system (the guests are
    loopback addresses of this machine, so it is theirs too)."""
    out = subprocess.run(["lsblk", "-J", "-p", "-o", "NAME,TYPE,MOUNTPOINT"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    for dev in json.loads(out)["blockdevices"]:
        if dev.get("mountpoint") not in (None, "[SWAP]"):
            return dev["name"], dev["mountpoint"]
    pytest.skip("this machine has no block device with a mounted file system")


def test_writing_to_a_device_holding_a_mounted_file_system_is_refused(
    local_guests: LocalGuests,
) -> None:
    dev, where = mounted_block_device()
    with Guest(local_guests[0]) as g:
        with pytest.raises(GuestError) as err:
            check(g, [dev], writes=True)
        check(g, [dev], writes=False)  # reading it harms nothing
    text = str(err.value)
    assert text.startswith(f"{local_guests[0].name}:") or local_guests[0].name in text
    assert f"fio would write to {dev}" in text and f"on {where}" in text


def test_a_device_that_is_not_there_is_refused_listing_the_guests_disks(
    local_guests: LocalGuests,
) -> None:
    dev, _ = mounted_block_device()
    with Guest(local_guests[0]) as g, pytest.raises(GuestError) as err:
        check(g, ["/dev/sdzz9"], writes=False)
    assert "/dev/sdzz9 is not there" in str(err.value) and dev in str(err.value)


def test_files_and_new_files_pass_folders_do_not(local_guests: LocalGuests) -> None:
    work = local_guests.sshd.workdir
    with Guest(local_guests[0]) as g:
        check(g, [f"{work}/new.dat", "/dev/null"], writes=True)
        with pytest.raises(GuestError, match="is a folder"):
            check(g, [str(work)], writes=True)
        with pytest.raises(GuestError, match="its folder does not exist"):
            check(g, [f"{work}/no/such/dir/f.dat"], writes=True)


def test_a_path_with_shell_characters_is_an_argument_not_shell_text(
    local_guests: LocalGuests,
) -> None:
    work = local_guests.sshd.workdir
    evil = f"{work}/x$(touch {work}/PWNED);`touch {work}/PWNED2`"
    with Guest(local_guests[0]) as g, pytest.raises(GuestError, match="folder does not"):
        check(g, [evil], writes=True)  # the slashes inside make a folder that is not there
    assert not (work / "PWNED").exists() and not (work / "PWNED2").exists()


def test_state_parsing_and_verdicts_are_pure() -> None:
    state = parse_state("block /dev/sdb\n/dev/sdb\n/dev/sdb1 /data\n/dev/sdb2 [SWAP]\n"
                        "disks\n/dev/sda 16G disk\n/dev/sdb 100G disk\n/dev/sr0 1G rom\n")
    assert state.mounted == (("/dev/sdb1", "/data"), ("/dev/sdb2", "[SWAP]"))
    assert state.disks == ("/dev/sda 16G", "/dev/sdb 100G")
    assert "sdb1 on /data, /dev/sdb2 as swap" in (problem("/dev/sdb", state, True) or "")
    assert problem("/dev/sdb", parse_state("block /dev/sdb\n/dev/sdb\ndisks\n"), True) is None
    assert fio_paths(r"/dev/sdb:/dev/sdc:/x\:y") == ["/dev/sdb", "/dev/sdc", "/x:y"]
    assert job_writes("randread", False) is False and job_writes("randread", True) is True
    assert job_writes("randrw", False) is True


def test_the_fio_workload_checks_its_named_target_before_writing(
    tmp_path, local_guests: LocalGuests, vbench_home  # type: ignore[no-untyped-def]
) -> None:
    import yaml

    from tests.integration.test_redis_scaleout import run
    from tests.integration.test_redis_scaleout import write_lab as redis_lab

    target = f"{local_guests.sshd.workdir}/no/such/folder/f.dat"
    s = tmp_path / "s.yaml"
    s.write_text(yaml.safe_dump({
        "version": 1, "name": "fio-target",
        "topology": {"target": {"nodes": ["guest1"]}},
        "workload": {"driver": "fio", "params": {"rw": "randwrite", "filename": target,
                                                  "size": "1m"}},
        "repeat": 1, "phases": {"warmup": "0s", "steady": "1s"},
    }))  # fmt: skip
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status != "ok"
    assert f"guest1: fio filename {target}: its folder does not exist" in json.dumps(done.log)


def test_a_disk_uuid_the_guest_does_not_show_fails_naming_the_guest_and_its_disks(
    local_guests: LocalGuests,
) -> None:
    """`disk:N` in a real guest: its lsblk (the command line vbench sends) lists no disk
    with a VMware uuid as WWN, so the trial is refused before fio is started."""
    dev, _ = mounted_block_device()
    spec = replace(local_guests[0], data_disks=("6000C29e-0d1c-2b3a-4958-67f8e9d0c1b2",))
    with Guest(spec) as g, pytest.raises(GuestError) as err:
        resolve_in(g, [DiskRef(1)])
    text = str(err.value)
    assert text.startswith(f"{spec.name}: disk:1 (virtual disk uuid 6000C29e-")
    assert dev.rstrip("0123456789") in text  # the guest's own disks, as lsblk named them
