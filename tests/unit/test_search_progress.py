"""What `vbench run` and `vbench plan` say about a find-max search, whose levels are
chosen as it runs: the levels and trials it may still run (its own outlook, about
⌈log2(bracket / gap)⌉ levels plus verification), times the per-trial time, as a range
— never the plan's single start level. A resumed run says what it kept, and a progress
line shows the first headline figure a trial has."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from tests.analysis_runs import add_run
from tests.unit.test_progress_lines import Clock
from vbench.analysis.findmax import FindMax, SearchParams
from vbench.cli import cli
from vbench.cli.eta import Eta
from vbench.cli.progress import Kept, RichProgress, headline_text
from vbench.config.load import load_scenario
from vbench.config.types import format_duration
from vbench.engine.plan import Plan, build_plan
from vbench.results.records import PhaseTimes, Sample, TrialResult
from vbench.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
FINDMAX = ROOT / "examples" / "fio-findmax-local.yaml"
PARAMS = SearchParams(min=50, max=1600, step=100, trials=1, verify_trials=1, gap=5.0)


def _run(search: FindMax, limit: float) -> list[tuple[tuple[int, int], tuple[int, int], int, int]]:
    """Play the search against a lab whose boundary is ``limit``: per request, the
    outlook's levels and trials and what was then really left (levels, trials)."""
    seen = []
    while (req := search.next()) is not None:
        o = search.outlook()
        seen.append((o.levels, o.trials, len(search.levels), req.trials))
        verdict = req.level <= limit
        lv = search.levels[req.level]
        search.record(req.level, [*lv.verdicts, *[verdict] * req.trials], verdict)
    levels, trials = len(search.levels), sum(r for *_x, r in seen)
    out, ran = [], 0
    for o_levels, o_trials, known, req_trials in seen:
        out.append((o_levels, o_trials, levels - known, trials - ran))
        ran += req_trials
    return out


@pytest.mark.parametrize("limit", [49, 50, 63, 150, 399.5, 412, 777, 1200, 1599, 1600, 5000])
def test_the_search_outlook_holds_what_it_then_runs(limit: float) -> None:
    """At every request the levels and trials really left lie in the outlook's range."""
    for levels, trials, levels_left, trials_left in _run(FindMax(PARAMS), limit):
        assert levels[0] <= levels_left <= levels[1], (limit, levels, levels_left)
        assert trials[0] <= trials_left <= trials[1], (limit, trials, trials_left)


@pytest.mark.parametrize("limit", [1234, 999999])
def test_a_very_wide_search_is_read_from_a_spread_of_its_paths(limit: float) -> None:
    """1 to 1,000,000 at a 1 % gap has more paths than FindMax.outlook plays out: the
    ones it plays, spread over the bracket, still hold what the search then runs (two
    limits: each search here costs a second or so of play-outs)."""
    wide = SearchParams(min=1, max=1_000_000, trials=3, verify_trials=2, gap=1.0)
    for levels, trials, levels_left, trials_left in _run(FindMax(wide), limit):
        assert levels[0] <= levels_left <= levels[1], (limit, levels, levels_left)
        assert trials[0] <= trials_left <= trials[1], (limit, trials, trials_left)


def test_the_outlook_narrows_as_the_bracket_closes() -> None:
    steps = _run(FindMax(PARAMS), 412)
    most = [levels[1] for levels, *_ in steps]
    assert most == sorted(most, reverse=True) and most[-1] == 0
    # Once bracketed (385 passes, 416 fails here after the ramp 50, 150, 350, 750 and
    # two bisections), at most ⌈log2(bracket / gap)⌉ new levels are left.
    search = FindMax(PARAMS)
    for level, ok in ((50, True), (150, True), (350, True), (750, False), (550, False)):
        assert search.next().level == level
        search.record(level, [ok], ok)
    bracket, gap = 550 - 350, 0.05 * 350
    assert search.next().level == 450  # under way
    assert search.outlook().levels[1] <= math.ceil(math.log2(bracket / gap))


def test_an_ended_search_has_nothing_left() -> None:
    search = FindMax(SearchParams(min=1, max=4, trials=1, verify_trials=0))
    _run(search, 10)
    assert search.outlook().levels == (0, 0) and search.outlook().trials == (0, 0)


@pytest.fixture
def findmax_plan() -> Plan:
    return build_plan(load_scenario(FINDMAX))


def test_plan_and_validate_of_a_search_give_its_range_of_levels_trials_and_time() -> None:
    plan = CliRunner().invoke(cli, ["plan", str(FINDMAX)])
    assert plan.exit_code == 0, plan.output
    first = plan.output.splitlines()[0]
    assert "1 point × 1 trial" not in plan.output
    found = re.search(r"(\d+)–(\d+) levels, (\d+)–(\d+) trials, estimated (.+)–(.+) \(if no "
                      r"level is noisy\)", first)
    assert found, first
    lo_levels, hi_levels, lo_trials, hi_trials = map(int, found.groups()[:4])
    # The start level failing ends it (1 level); at most the stop.max_levels of 14.
    assert 1 <= lo_levels < hi_levels <= 14 and lo_levels <= lo_trials < hi_trials
    valid = CliRunner().invoke(cli, ["validate", str(FINDMAX)])
    assert valid.exit_code == 0 and f"{lo_levels}–{hi_levels} levels" in valid.output


def _ok(point: int, trial: int, samples: tuple[Sample, ...]) -> TrialResult:
    return TrialResult(point, trial, "ok", PhaseTimes(), samples, None)


def test_the_search_eta_is_its_trials_left_times_the_trial_time(findmax_plan: Plan) -> None:
    clock = Clock()
    eta = Eta(findmax_plan, clock)
    point = findmax_plan.points[0]
    per_trial = point.trial_seconds + findmax_plan.overhead_per_trial
    eta.start_trial(point, (4, 9))
    lo, hi = eta.left_range()
    finish = findmax_plan.finish_seconds
    assert (lo, hi) == pytest.approx((4 * per_trial + finish, 9 * per_trial + finish))
    clock.now += 2 * per_trial  # twice as slow as planned
    eta.end_trial()
    eta.start_trial(point, (3, 8))
    assert eta.left_range() == pytest.approx((6 * per_trial + finish, 16 * per_trial + finish))


def test_search_progress_lines_say_the_search_s_own_time_left(
    findmax_plan: Plan, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()  # each trial takes what it was planned to: the pace is 1
    monkeypatch.setattr("vbench.cli.progress.Eta", lambda plan, **kw: Eta(plan, clock, **kw))
    progress = RichProgress(Console(file=io.StringIO()))  # plain lines, as in cron
    progress.start_run(findmax_plan)
    search = FindMax(PARAMS)
    point = findmax_plan.points[0]
    per_trial = point.trial_seconds + findmax_plan.overhead_per_trial
    said = []
    for trial in (1, 2, 3):
        req = search.next()
        outlook = search.outlook()
        said.append(outlook)
        progress.outlook(outlook)
        progress.start_trial(point, trial)
        clock.now += per_trial
        progress.end_trial(_ok(0, trial, (Sample("total_iops", req.level, "IO/s", "fio"),)))
        search.record(req.level, [True], True)
    lines = capsys.readouterr().err.splitlines()
    lefts = [line.split("run left ≈ ")[1] for line in lines]
    for left, outlook in zip(lefts, said, strict=True):
        # The trials the search may still run after this one, at the trial's time.
        lo, hi = ((n - 1) * per_trial for n in outlook.trials)
        assert left == (f"{format_duration(lo)}–{format_duration(hi)}, "
                        f"at most {outlook.levels[1]} more levels"), (left, outlook)
    assert len(set(lefts)) == 3, lefts  # it changes as the search goes on


def test_the_first_plain_line_of_a_search_gives_its_range() -> None:
    out = io.StringIO()
    RichProgress(Console(file=out, width=500)).start_run(build_plan(load_scenario(FINDMAX)))
    assert re.search(r"levels chosen as it runs: \d+–\d+ levels, \d+–\d+ trials, estimated",
                     out.getvalue()), out.getvalue()


def test_a_progress_line_shows_the_first_headline_a_trial_has() -> None:
    result = _ok(0, 1, (Sample("total_iops", 12345.0, "IO/s", "fio"),))
    # `speedup` is derived across points: no trial has it; the next headline is shown.
    assert headline_text(result, ("speedup", "total_iops")) == "total_iops 12,345 IO/s"
    assert headline_text(result, ("speedup",)) is None


def test_a_resumed_run_says_what_it_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    with Store.open(url, tmp_path) as store:
        rid = add_run(store, "20270101-000000-kept", [({"bs": "4k"}, {"ops": [1.0, 2.0, 3.0]}),
                                                    ({"bs": "64k"}, {"ops": [1.0]})],
                      failed=[(1, 1)])
        kept = Kept.of(store, rid)
    plan = build_plan(load_scenario(ROOT / "examples" / "quickstart.yaml"))  # 2 points × 3
    out = io.StringIO()
    RichProgress(Console(file=out, width=500), kept=kept).start_run(plan)
    assert f"resuming run {rid}: kept {kept.trials} trials ({kept.ok} ok) of 2 points; " \
           f"{6 - kept.trials} of 6 trials remain" in out.getvalue()


def test_the_live_display_of_a_search_counts_and_times_what_it_may_still_run(
    findmax_plan: Plan,
) -> None:
    progress = RichProgress(Console(file=io.StringIO(), force_terminal=True, width=160))
    progress.start_run(findmax_plan)
    try:
        assert progress._progress is not None
        search = FindMax(PARAMS)
        search.next()
        outlook = search.outlook()
        progress.outlook(outlook)
        progress.start_trial(findmax_plan.points[0], 1)
        task = progress._progress.tasks[0]
        # The bar's length: the trials the search may still run, not the plan's one.
        assert task.total == outlook.trials[1] > 1
        assert re.fullmatch(rf".+–.+, at most {outlook.levels[1]} more levels",
                            task.fields["left"]), task.fields["left"]
    finally:
        progress.end_run()


def test_a_resumed_search_says_what_it_has_left(findmax_plan: Plan) -> None:
    out = io.StringIO()
    kept = Kept("20270101-000000-srch", trials=3, ok=3, points=3, rerun=1)
    progress = RichProgress(Console(file=out, width=500), kept=kept)
    progress.start_run(findmax_plan)
    search = FindMax(PARAMS)
    for level, ok in ((50, True), (150, True), (350, True)):  # what the first session ran
        assert search.next().level == level
        search.record(level, [ok], ok)
    search.next()
    outlook = search.outlook()
    progress.outlook(outlook)
    text = out.getvalue()
    assert "kept 3 trials (3 ok) of 3 levels; 1 interrupted trial run again" in text
    # Not the whole search's estimate: what is left of it, from where it stands.
    assert "running the rest of a find-max search over rate_iops" in text
    assert not re.search(r"\d+–\d+ levels, \d+–\d+ trials, estimated", text), text
    assert (f"the search goes on: {outlook.levels[0]}–{outlook.levels[1]} more levels at most, "
            f"{outlook.trials[0]}–{outlook.trials[1]} trials") in text


def test_a_resumed_matrix_run_times_only_the_trials_it_has_left(plan_2x3: Plan) -> None:
    out = io.StringIO()
    kept = Kept("20270101-000000-mtrx", trials=4, ok=4, points=2, rerun=0)
    RichProgress(Console(file=out, width=500), kept=kept).start_run(plan_2x3)
    per_trial = plan_2x3.trials_seconds / plan_2x3.n_trials
    assert (f"running the 2 trials left of 2 points × 3 trials (estimated "
            f"{format_duration(2 * per_trial)})") in out.getvalue()
    clock = Clock()
    eta = Eta(plan_2x3, clock, skipped=4)
    assert eta.left() == pytest.approx(2 * per_trial)


@pytest.fixture
def plan_2x3() -> Plan:
    return build_plan(load_scenario(ROOT / "examples" / "quickstart.yaml"))  # 2 points × 3
