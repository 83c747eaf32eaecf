"""esxtop selection patterns (collectors[].options.counters, `--select`) are matched
without a backtracking regular expression: a pattern of many wildcards
(``*?*?*?…#``) made ``vbench validate`` spend seconds to years of CPU checking it
against the known counters (7 s at 12 pairs, doubling with each more). Matching is
linear in the pattern's pieces now, and means what it meant: ``*`` any run, ``?`` one
character, case ignored, the whole name."""

from __future__ import annotations

import pytest

from tests.unit.test_fuzz_configs import cpu_limit
from vbench.parsers.esxtop.names import _glob, check_known, compile_selection, parse_pattern


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
    # The regex took ~7 s at 12 pairs, doubling with each pair: over 2 s, CpuLimit fails it.
    with cpu_limit(2.0):
        said = check_known(selection)
        assert not parse_pattern(f"{wild}\\x").matches_kind("Physical Disk Partition", "x")
    assert len(said) == 2 and "no object" in said[0] and "no counter" in said[1]
