"""Leaving a guest's (or pool's) `with` block: kill, then close, whatever happens."""

from __future__ import annotations

import pytest

from vbench.errors import GuestError
from vbench.guest.host import KillsOnExit


class Fake(KillsOnExit):
    def __init__(self, kill_fails: bool) -> None:
        self.kill_fails, self.closed, self.killed = kill_fails, False, False

    def kill_all(self) -> None:
        self.killed = True
        if self.kill_fails:
            raise GuestError("guest g1", "kill failed: connection lost")

    def close(self) -> None:
        self.closed = True


def test_a_clean_exit_kills_then_closes() -> None:
    fake = Fake(kill_fails=False)
    with fake:
        pass
    assert fake.killed and fake.closed


def test_a_failed_kill_is_raised_when_nothing_else_went_wrong() -> None:
    fake = Fake(kill_fails=True)
    with pytest.raises(GuestError, match="kill failed"), fake:
        pass
    assert fake.closed


def test_a_failed_kill_is_noted_on_the_error_already_leaving() -> None:
    fake = Fake(kill_fails=True)
    with pytest.raises(ValueError) as err, fake:
        raise ValueError("the trial failed")
    assert fake.closed
    assert any("cleanup also failed" in n and "kill failed" in n for n in err.value.__notes__)
