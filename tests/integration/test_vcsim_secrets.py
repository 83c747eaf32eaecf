"""The simulated vCenter's credentials stay out of every process's command line and out
of vcsim's log: vcsim reads them from private files, and the GOVC_URL line it prints
(user:password in it) goes to a private FIFO instead of the log."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import pytest
from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim

from vbench.errors import LabError
from vbench.vsphere.simulator import VcsimOptions, start_vcsim, vcsim_argv

pytestmark = [pytest.mark.integration]


def command_lines_holding(secret: str) -> list[str]:
    """The command line of every process of this machine that contains ``secret``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            raw = cmdline.read_bytes()
        except OSError:  # the process ended while we looked
            continue
        if secret.encode() in raw:
            found.append(raw.replace(b"\0", b" ").decode(errors="replace"))
    return found


def test_vcsim_argv_refuses_credentials_as_values() -> None:
    opts = VcsimOptions(username="admin", password="pw-xyz")
    with pytest.raises(ValueError, match="never on its command line"):
        vcsim_argv("vcsim", "127.0.0.1", 8989, opts)


def test_a_password_with_outer_white_space_is_refused_in_words(tmp_path: Path) -> None:
    # vcsim trims what it reads from its files: such a password could never log in.
    opts = VcsimOptions(username="admin", password=" pw ")
    with pytest.raises(LabError, match="white space"):
        start_vcsim(opts, tmp_path / "vcsim.log")


def test_the_password_is_in_no_command_line_and_not_in_the_log(tmp_path: Path) -> None:
    user, password = "sim-admin", f"pw-{secrets.token_hex(8)}"
    log = tmp_path / "vcsim.log"
    log.write_text(f"an older log: GOVC_URL=https://{user}:{password}@x\n")
    log.chmod(0o644)
    proc = start_vcsim(VcsimOptions(username=user, password=password), log)
    try:
        assert proc.alive()
        assert command_lines_holding(password) == []
        # The credentials still guard the simulator: right password in, wrong one out.
        si = SmartConnect(host=proc.address, port=proc.port, user=user, pwd=password,
                          disableSslCertValidation=True)
        Disconnect(si)
        with pytest.raises(vim.fault.InvalidLogin):
            SmartConnect(host=proc.address, port=proc.port, user=user, pwd="wrong",
                         disableSslCertValidation=True)
    finally:
        proc.stop()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert password not in log.read_text(errors="replace")
    # Nothing of the private credential folder is left in the temporary directory.
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    for left in tmp.glob("vbench-vcsim-*"):
        for f in (f for f in left.iterdir() if f.is_file()):  # not FIFOs: they block
            assert password not in f.read_text(errors="replace"), f
