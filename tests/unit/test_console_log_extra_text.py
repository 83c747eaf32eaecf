"""A DVD Store console log followed by other text — the driver's legend of its output
fields, a shell prompt, a pasted note — keeps every figure the driver printed; what is
not its output is ignored and counted, and only a log without figures is refused
(issue 28, item 10). The driver's output is the real capture of the shared corpus."""

from __future__ import annotations

import pytest

from tests.corpus import SHARED, need
from vbench.errors import ParseError
from vbench.parsers.dvdstore import parse_dvdstore, result_rows

DOC = "dvdstore_ds21__ds2driver_doc.txt"

# What follows a capture in the wild, each line not the driver's output.
LEGEND = [
    "et= elapsed time since start (or since Stats reset after the warm-up)",
    "n_overall= total number of orders processed",
    "opm= orders per minute",
    "rt_tot_avg_msec= average order response time",
]
PROMPT = ["perf@client-07:~/ds3$ "]
NOTE = [
    "note: et= 61 s was cut short, opm= looks low vs. last week",
    "Final: et= see the run above; opm= to be checked with the DBA",
    "et=   70.1 n_overall=?? (pasted from the other window)",
]


def driver_output() -> str:
    """The driver's console output of the corpus capture (its 'Typical run', from the
    settings line to the last line the driver printed)."""
    lines = need(SHARED / "dvdstore" / DOC).read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("target= "))
    end = next(i for i, ln in enumerate(lines) if "n_purchase_from_start" in ln)
    return "\n".join(lines[start:end + 1]) + "\n"


def figures(text: str) -> tuple[object, ...]:
    r = parse_dvdstore(text)
    assert r.final is not None
    return (r.opm(), r.rt_avg_ms(), r.rt_max_ms(), r.rollback_rate_pct(), len(r.intervals),
            len(r.steady), r.final.counts, r.final.avg_ms, r.purchases_from_start)


@pytest.mark.parametrize("extra", [LEGEND, PROMPT, NOTE, LEGEND + PROMPT + NOTE],
                         ids=["legend", "prompt", "note", "all"])
def test_text_after_the_driver_output_is_ignored_and_counted(extra: list[str]) -> None:
    clean = driver_output()
    assert parse_dvdstore(clean).ignored == 0
    text = clean + "\n".join(extra) + "\n"
    assert figures(text) == figures(clean)
    r = parse_dvdstore(text)
    assert r.ignored == len(extra)
    assert result_rows(r)[-1]["ignored_lines"] == len(extra)


def test_the_whole_corpus_file_keeps_the_figures_and_counts_the_rest() -> None:
    text = need(SHARED / "dvdstore" / DOC).read_text()
    r = parse_dvdstore(text)
    assert figures(text) == figures(driver_output())
    assert r.ignored > 0  # the document around the run: its prose and its legend


def test_a_log_without_figures_is_still_refused() -> None:
    with pytest.raises(ParseError, match="not DVD Store"):
        parse_dvdstore("\n".join(LEGEND + PROMPT + NOTE) + "\n", "notes.txt")
