"""The SSH guest layer's public names; import them from here.

The implementation is split by concern: :mod:`~vbench.guest.spec` (what a guest is),
:mod:`~vbench.guest.connect` (transport, host keys, auth), :mod:`~vbench.guest.shell`
(the quoted sh scripts), :mod:`~vbench.guest.host` (:class:`Guest`),
:mod:`~vbench.guest.process` (:class:`RemoteProcess`) and :mod:`~vbench.guest.pool`.
"""

from __future__ import annotations

from vbench.guest.host import Guest
from vbench.guest.pool import GuestPool
from vbench.guest.process import RemoteProcess
from vbench.guest.spec import CommandResult, GuestSpec

__all__ = ["CommandResult", "Guest", "GuestPool", "GuestSpec", "RemoteProcess"]
