"""What a lab names reaches `vbench run`'s live output as text: a VM another team named
'db [/old]' in vCenter, an error a guest's tool wrote, a point's factor values. Never rich
markup (a closing tag that opens nothing raised MarkupError mid-run; '[bs=4k]' vanished
from the progress bar and the red failure line) and never a raw control character (an
ESC or a BEL from a name reached the terminal): each is written as ``\\xNN``, the rule of
`vbench show` and the exports (vbench/shown.py)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from vbench.cli.progress import RichProgress
from vbench.config.load import load_scenario
from vbench.engine.plan import Plan, build_plan
from vbench.results.records import PhaseTimes, TrialResult

ROOT = Path(__file__).resolve().parents[2]
# A VM name as vCenter may hold it: markup-like brackets, a screen clear, a bell.
NAMED = "VM db [/old] \x1b[2J gone\x07"
SHOWN = "VM db [/old] \\x1b[2J gone\\x07"
# What rich itself writes on a terminal: colours and cursor moves of the live display.
_RICH_CODES = re.compile(r"\x1b\[[0-9;?]*[mAKGlh]|\r")


@pytest.fixture
def plan() -> Plan:
    return build_plan(load_scenario(ROOT / "examples" / "quickstart.yaml"))  # bs: 4k, 64k


def _failed(error: str) -> TrialResult:
    return TrialResult(0, 1, "failed", PhaseTimes(), (), error)


def test_live_lines_print_what_a_lab_named_as_text(plan: Plan) -> None:
    out = io.StringIO()
    progress = RichProgress(Console(file=out, force_terminal=True, width=200))
    progress.start_run(plan)
    try:
        progress.start_trial(plan.points[0], 1)
        progress.end_trial(_failed(f"vCenter: {NAMED}"))
        progress.notice(f"point 1 trial 1 disturbed: vMotion of {NAMED} to esx2")
    finally:
        progress.end_run()
    raw = out.getvalue()
    assert "\x07" not in raw and "\x1b[2J" not in raw
    text = _RICH_CODES.sub("", raw)
    assert f"point 1/2 [bs=4k] trial 1 failed: vCenter: {SHOWN}\n" in text
    assert f"point 1 trial 1 disturbed: vMotion of {SHOWN} to esx2\n" in text


def test_the_live_bar_shows_the_points_factor_values(plan: Plan) -> None:
    progress = RichProgress(Console(file=io.StringIO(), force_terminal=True, width=200))
    progress.start_run(plan)
    try:
        assert progress._progress is not None
        progress.start_trial(plan.points[0], 1)
        progress.phase("steady", 30.0)
        task = progress._progress.tasks[0]
        shown = [str(c.render(task)) for c in progress._progress.columns[:1]]
    finally:
        progress.end_run()
    assert shown[0].startswith("point 1/2 [bs=4k] trial 1/3 · steady"), shown


def test_plain_lines_print_what_a_lab_named_as_text(
    plan: Plan, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    progress = RichProgress(Console(file=out))  # not a terminal: plain lines (cron, CI)
    progress.start_run(plan)
    progress.start_trial(plan.points[0], 1)
    progress.end_trial(_failed(f"ssh: {NAMED}"))
    progress.notice(f"collector failed: {NAMED}")
    err = capsys.readouterr().err
    assert "\x1b" not in err + out.getvalue() and "\x07" not in err + out.getvalue()
    assert f"point 1/2 [bs=4k] trial 1/3: failed — ssh: {SHOWN} · run left" in err
    assert f"collector failed: {SHOWN}\n" in out.getvalue()


def test_the_error_line_prints_what_a_tool_wrote_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CLI's one error printer (a run stopped by a lab error says it there too): a
    # tool's output quoted in the error reached the terminal with its ESC and BEL.
    from vbench.cli import main

    out = tmp_path / "fio.out"
    out.write_text(f"fio: {NAMED}\n")
    with pytest.raises(SystemExit) as exit_:
        main(["parse", "fio", str(out)])
    err = capsys.readouterr().err
    assert exit_.value.code != 0 and err.startswith("error: ")
    assert "\x1b" not in err and "\x07" not in err
    assert SHOWN in err
