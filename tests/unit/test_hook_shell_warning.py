"""A lab hook that hands a level's value to a shell (``[sh, -c, "… {value}"]``) runs
whatever the value says, one given by ``--set`` included: `validate`, `plan` and `run`
warn, as they do for fio's allow_exec, and the report shows it (issue 28, item 4)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.analysis_runs import add_run, scenario_doc
from tests.unit.test_config_limits import QUICKSTART, run_cli
from tests.unit.test_run_json_on_failure import run_json
from vbench.cli import cli
from vbench.config.hookspec import shell_of
from vbench.report.build import render_report
from vbench.results.store import Store

WARNING = "factors.latency.hook.run: warning: hands a level's value to a shell (sh -c)"


def at(s: Path) -> str:
    """Where the hook's `run:` value is (file:line:col), as an error there would say:
    the review found warnings printed without it."""
    lines = s.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "hook: {" in text)
    return f"{s}:{line}:{lines[line - 1].index('run: ') + 6}"


def hooked(tmp_path: Path, run: str) -> Path:
    text = QUICKSTART.read_text().replace("  bs: [4k, 64k]", (
        f"  bs: [4k, 64k]\n  latency:\n    hook: {{node: wan, run: {run}, undo: [tc, del]}}\n"
        "    levels: [1ms, 5ms]\n"))
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(("argv", "shell"), [
    (["sh", "-c", "tc qdisc add delay {value}"], "sh"),
    (["sudo", "/bin/bash", "-ec", "tc {level}"], "bash"),
    # Review: a value after the script is its $0/$1 (data), and ssh and su run a
    # command string with a shell.
    (["env", "dash", "-c", "tc \"$1\"", "--", "{value}"], None),
    (["sh", "-c", "tc delay $0", "{value}"], None),
    (["ssh", "router", "tc qdisc add delay {value}"], "ssh"),
    (["ssh", "-p", "2222", "-o", "BatchMode=yes", "router", "tc", "delay", "{value}"], "ssh"),
    (["ssh", "-p{value}", "router", "true"], None),
    (["su", "-c", "tc qdisc add delay {value}"], "su"),
    (["sudo", "su", "root", "--command={level}"], "su"),
    (["su", "-c", "/opt/set.sh", "root"], None),
    (["tc", "qdisc", "add", "delay", "{value}"], None),
    (["sh", "/opt/set-latency.sh", "{value}"], None),
    (["sh", "-c", "tc qdisc del"], None),
])
def test_a_value_handed_to_a_shell_script_is_recognised(argv: list[str], shell: str) -> None:
    assert shell_of(argv) == shell


def test_validate_and_plan_warn_of_a_hook_that_runs_a_shell(tmp_path: Path) -> None:
    s = hooked(tmp_path, '[sh, -c, "tc qdisc add delay {value}"]')
    code, err = run_cli("validate", str(s))
    assert code == 0, err
    assert f"{at(s)}: {WARNING}" in err
    res = CliRunner().invoke(cli, ["plan", str(s)])
    assert res.exit_code == 0, res.output
    assert "warning: factors.latency.hook.run: hands a level's value to a shell" in res.output
    res = CliRunner().invoke(cli, ["plan", str(s), "--json"])
    findings = json.loads(res.output)["findings"]
    assert [f["path"] for f in findings] == ["factors.latency.hook.run"]


def test_a_hook_without_a_shell_is_not_warned_of(tmp_path: Path) -> None:
    code, err = run_cli("validate", str(hooked(tmp_path, '[tc, qdisc, add, delay, "{value}"]')))
    assert code == 0 and "shell" not in err, err


def test_run_warns_before_it_starts(tmp_path: Path) -> None:
    s = hooked(tmp_path, '[sh, -c, "tc qdisc add delay {value}"]')
    # The lab's nodes are unreachable (and lack the hook's node): the run stops at its
    # preflight, after it has said what the scenario's hook does.
    _code, _out, err = run_json(tmp_path, str(s))
    assert f"{at(s)}: {WARNING}" in err, err


def test_the_report_shows_the_warning(tmp_path: Path) -> None:
    sc = scenario_doc("hooked", {"latency": ["1ms"]})
    sc["factors"]["latency"]["hook"] = {"node": "wan", "run": ["bash", "-c", "x {value}"],
                                        "undo": ["x"], "timeout": 60.0}
    with Store.open(f"sqlite:///{tmp_path}/h.db", tmp_path) as store:
        add_run(store, "20270101-000000-00000001", [({"latency": "1ms"}, {"ops": [1.0, 2.0]})],
                scenario=sc)
        doc = json.loads(render_report(store, ["20270101-000000-00000001"], "json"))
        md = render_report(store, ["20270101-000000-00000001"], "markdown")
        page = render_report(store, ["20270101-000000-00000001"], "html")
    expected = "factors.latency.hook.run: hands a level's value to a shell (bash -c)"
    assert any(w.startswith(expected) for w in doc["runs"][0]["warnings"])
    assert expected in md and expected in html.unescape(page)
