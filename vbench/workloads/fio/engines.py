"""fio's I/O engine names: ``ioengine`` must be one of them (any other token was passed to
fio as written and failed in every guest at run time, not at validate).

The names are those fio's HOWTO documents (section "I/O engine") and ``fio --enghelp``
lists; which of them a guest's fio has depends on how it was built, which only the run
finds out. ``external:PATH`` loads an engine from a file: the fio options guard decides
on it, so it is left to that check here.
"""

from __future__ import annotations

import difflib

FIO_ENGINES = frozenset({
    # synchronous and asynchronous system calls
    "sync", "psync", "vsync", "pvsync", "pvsync2", "io_uring", "io_uring_cmd", "libaio",
    "posixaio", "solarisaio", "windowsaio", "mmap", "splice",
    # devices and special I/O
    "sg", "libzbc", "mtd", "dev-dax", "pmemblk", "libpmem", "xnvme", "libblkio", "nbd",
    "libiscsi", "libcufile",
    # no data, or metadata only
    "null", "cpuio", "falloc", "ftruncate", "e4defrag", "filecreate", "filestat",
    "filedelete", "dircreate", "dirstat", "dirdelete",
    # network and distributed storage
    "net", "netsplice", "rdma", "rados", "rbd", "http", "gfapi", "gfapi_async", "libhdfs",
    "ime_psync", "ime_psyncv", "ime_aio", "dfs", "nfs",
    "librpma_apm_client", "librpma_apm_server", "librpma_gpspm_client", "librpma_gpspm_server",
    # runs a program (refused unless allow_exec: see the fio options guard)
    "exec",
})


def engine_problem(name: str) -> str | None:
    """Why ``name`` is not an fio I/O engine, or None when it is one."""
    if name in FIO_ENGINES or name.startswith("external:"):
        return None
    close = difflib.get_close_matches(name, sorted(FIO_ENGINES), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    common = "libaio, io_uring, psync, sync, posixaio, mmap, null"
    return f"{name!r} is not an fio I/O engine ({hint}common ones: {common}; see fio --enghelp)"
