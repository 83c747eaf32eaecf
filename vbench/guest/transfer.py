"""Recursive SFTP copies (paramiko's SFTPClient does single files only)."""

from __future__ import annotations

import posixpath
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import paramiko
else:
    paramiko = lazy_module("paramiko")


def makedirs(sftp: paramiko.SFTPClient, path: str) -> None:
    if path in ("", "/", "."):
        return
    try:
        if stat.S_ISDIR(sftp.stat(path).st_mode or 0):
            return
    except FileNotFoundError:
        pass
    makedirs(sftp, posixpath.dirname(path))
    try:
        sftp.mkdir(path)
    except OSError:
        # Another thread may have created it meanwhile; anything else fails on use.
        if not stat.S_ISDIR(sftp.stat(path).st_mode or 0):
            raise


def put_tree(sftp: paramiko.SFTPClient, local: Path, remote: str) -> None:
    if local.is_dir():
        makedirs(sftp, remote)
        for child in sorted(local.iterdir()):
            put_tree(sftp, child, posixpath.join(remote, child.name))
        return
    sftp.put(str(local), remote)
    sftp.chmod(remote, local.stat().st_mode & 0o7777)


def get_tree(sftp: paramiko.SFTPClient, remote: str, local: Path) -> None:
    if stat.S_ISDIR(sftp.stat(remote).st_mode or 0):
        local.mkdir(parents=True, exist_ok=True)
        for entry in sftp.listdir_attr(remote):
            get_tree(sftp, posixpath.join(remote, entry.filename), local / entry.filename)
        return
    local.parent.mkdir(parents=True, exist_ok=True)
    sftp.get(remote, str(local))
