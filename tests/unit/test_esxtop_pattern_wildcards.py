"""esxtop selection patterns (collectors[].options.counters, `--select`) are matched
without a backtracking regular expression: a pattern of many wildcards
(``*?*?*?…#``) made ``vbench validate`` spend seconds to years of CPU checking it
against the known counters (7 s at 12 pairs, doubling with each more). Matching is
linear in the pattern's pieces now, and means what it meant: ``*`` any run, ``?`` one
character, case ignored, the whole name."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

from vbench.parsers.esxtop.names import _glob, check_known, compile_selection, parse_pattern


class OverBudget(BaseException):
    pass


@contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    def expired(signum: int, frame: FrameType | None) -> None:
        raise OverBudget()

    previous = signal.signal(signal.SIGPROF, expired)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@pytest.mark.parametrize(("pattern", "name", "hit"), [
    ("Physical Cpu", "physical cpu", True),
    ("Physical Cpu", "Physical Cpus", False),
    ("Physical*", "Physical Cpu", True),
    ("*Cpu", "Physical Cpu", True),
    ("*Cpu", "Physical Cpu Load", False),
    ("P*l*C*u", "Physical Cpu", True),
    ("?hysical Cpu", "Physical Cpu", True),
    ("??", "a", False),
    ("*??", "abc", True),
    ("*a*a", "aXa", True),
    ("*a*a", "a", False),
    ("a*b*a", "aba", True),
    ("a*b*a", "ab", False),
    ("*", "", True),
    ("", "", True),
    ("", "x", False),
    ("% Used", "% used", True),
    ("*(copy)*", "vm (copy) 1", True),
    ("[x]", "[x]", True),
    ("[x]", "x", False),
    ("a.c", "abc", False),
    ("*\n*", "a\nb", True),
])
def test_wildcards_match_the_whole_name_case_ignored(pattern: str, name: str,
                                                     hit: bool) -> None:
    assert bool(_glob(pattern).fullmatch(name)) is hit


def test_a_pattern_of_many_wildcards_is_checked_at_once() -> None:
    # At least as many `?` as the names have characters: a regex engine skips a name
    # shorter than its pattern's least length, and backtracks only on the others.
    wild = "*?" * 16 + "#"
    selection = compile_selection([f"{wild}(*)\\*", f"Network Port(*)\\{wild}"])
    with cpu_budget(2.0):  # the regex took ~7 s at 12 pairs, doubling with each pair
        said = check_known(selection)
        assert not parse_pattern(f"{wild}\\x").matches_kind("Physical Disk Partition", "x")
    assert len(said) == 2 and "no object" in said[0] and "no counter" in said[1]
