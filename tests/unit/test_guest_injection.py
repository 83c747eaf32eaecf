"""Nothing from a scenario or a lab reaches a guest tool's file as something else than a
value: every rendered value follows its file's format, names that reach the guests are
checked where they enter, and fio options that run commands need ``allow_exec: true``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from vbench.cli import main
from vbench.config.lab import Lab
from vbench.errors import ConfigError
from vbench.guest.labspec import vm_guest_spec
from vbench.resources import data_dir
from vbench.templates import FORMATS, Templates, render_value
from vbench.workloads.fio.guard import EXEC_OPTIONS
from vbench.workloads.fio.jobs import (
    FioParams,
    adapt_user_job,
    render_layout,
    render_measure,
    render_prepare,
    scan_job_file,
)
from vbench.workloads.fio.pitfalls import findings
from vbench.workloads.redis_scaleout.params import RedisParams

PAYLOAD = "guest1\n[global]\nexec_prerun=touch PWNED"

# ----------------------------------------------------------------------------- renderer


def _template(tmp_path: Path, text: str) -> Templates:
    (tmp_path / "t.j2").write_text(text)
    return Templates(tmp_path)


@pytest.mark.parametrize("render", [render_measure, render_prepare, render_layout])
def test_a_header_cannot_add_a_section_to_a_fio_job(render: Any) -> None:
    # The attack: the guest name is written into the job file's header comment.
    args = (FioParams(), 0, 5, "/d") if render is render_measure else (FioParams(), "/d")
    with pytest.raises(ConfigError, match=r"\.fio\.j2: value .*exec_prerun.* refused"):
        render(*args, header=f"run r, guest {PAYLOAD}")
    assert "exec_prerun" not in render(*args, header="run r, guest guest1")


def test_a_user_job_file_header_and_directory_are_checked_too() -> None:
    job = "[j]\nrw=read\n"
    with pytest.raises(ConfigError, match="header"):
        adapt_user_job(job, 0, 5, "/d", header=f"guest {PAYLOAD}")
    with pytest.raises(ConfigError, match="directory"):
        adapt_user_job(job, 0, 5, "/d;x")


def test_fio_values_refuse_what_fio_would_cut_or_split() -> None:
    for bad in ("a;b", "a#b", " a", "a\nb", "a\rb"):
        with pytest.raises(ConfigError, match="refused"):
            render_value(bad, "fio", "v")
    assert render_value("zipf:1.2", "fio", "v") == "zipf:1.2"
    assert render_value(-3, "fio", "v") == "-3"


def test_redis_values_are_quoted_as_redis_splits_its_lines() -> None:
    assert render_value("/tmp/x y", "redis", "v") == '"/tmp/x y"'
    assert render_value('a"b\\c', "redis", "v") == '"a\\"b\\\\c"'
    assert render_value("it's", "redis", "v") == '"it\'s"'
    assert render_value("", "redis", "v") == '""'
    assert render_value("plain", "redis", "v") == "plain"
    assert render_value("a\tb", "redis", "v", tabs=True) == '"a\\tb"'
    with pytest.raises(ConfigError):
        render_value("a\nloadmodule /x.so", "redis", "v", tabs=True)


@pytest.mark.parametrize(
    ("fmt", "bad", "good"),
    [
        ("haproxy", "10.0.0.1:80 check # x", "10.0.0.1:6380"),
        ("yaml", "a: b", "127.0.0.1:22121:1"),
        ("yaml", "-x", "ketama"),
        ("nginx", "/srv/d; include /etc/x", "/tmp/vbench/r1/i0"),
        ("nginx", "/srv/{x}", "/tmp/a-b_c.d"),
        ("nginx", "/srv/a b", "[::1]:8080"),
        ("ini", "/d ; x", "/tmp/vbench/run"),
        ("ini", "${HOME}", "www-data"),
        ("php-string", "/d'; system('id'); '", "/tmp/vbench/x y"),
        ("sql", "1; DROP TABLE t", "42"),
    ],
)
def test_each_format_refuses_its_grammar_characters(fmt: str, bad: str, good: str) -> None:
    with pytest.raises(ConfigError, match=f"{fmt!s}|only|not allowed|comment"):
        render_value(bad, fmt, "v")
    assert render_value(good, fmt, "v") == good


def test_comment_values_keep_their_text_but_not_a_newline(tmp_path: Path) -> None:
    t = _template(tmp_path, "{# vbench: format=nginx #}\n# {{ h | comment }}\nroot {{ d }};\n")
    assert t.render("t.j2", h="run 1, a; b {c}", d="/x") == "# run 1, a; b {c}\nroot /x;\n"
    with pytest.raises(ConfigError, match="refused"):
        t.render("t.j2", h="x\nroot /etc", d="/x")
    with pytest.raises(ConfigError, match=r"t\.j2: value '/x; include /e' refused: .*nginx"):
        t.render("t.j2", h="x", d="/x; include /e")


def test_a_template_without_a_declaration_still_refuses_control_characters(
    tmp_path: Path,
) -> None:
    t = _template(tmp_path, "k={{ v }}\n")
    assert t.format_of("t.j2") == "line" and t.render("t.j2", v="a;b") == "k=a;b\n"
    with pytest.raises(ConfigError):
        t.render("t.j2", v="a\nb")
    bad = _template(tmp_path, "{# vbench: format=toml #}\nk={{ v }}\n")
    with pytest.raises(ConfigError, match="unknown format 'toml'"):
        bad.render("t.j2", v=1)


def test_every_shipped_template_declares_a_known_format() -> None:
    templates = sorted(data_dir("drivers").rglob("*.j2"))
    assert len(templates) >= 10
    for path in templates:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        m = re.fullmatch(r"\{# vbench: format=([a-z-]+) #\}", first)
        assert m and m.group(1) in FORMATS, f"{path}: first line {first!r}"


# ----------------------------------------------------------------------------- fio params


@pytest.mark.parametrize("option", sorted(EXEC_OPTIONS))
def test_fio_options_that_run_commands_or_touch_other_files_need_allow_exec(
    option: str,
) -> None:
    with pytest.raises(ValidationError, match=f"(?s)extra.{option}.*allow_exec: true"):
        FioParams(extra={option: "touch PWNED"})
    assert FioParams(allow_exec=True, extra={option: "touch PWNED"}).extra == {
        option: "touch PWNED"}


@pytest.mark.parametrize("engine", ["exec", "external:/tmp/e.so"])
def test_ioengines_that_load_or_run_code_need_allow_exec(engine: str) -> None:
    with pytest.raises(ValidationError, match=r"(?s)ioengine.*allow_exec"):
        FioParams(ioengine=engine)
    assert FioParams(ioengine=engine, allow_exec=True).ioengine == engine
    assert FioParams(ioengine="io_uring").ioengine == "io_uring"
    # fio would dlopen() an engine given as a path: not an engine name, refused always.
    with pytest.raises(ValidationError, match="not an fio I/O engine"):
        FioParams(ioengine="/tmp/e.so", allow_exec=True)


def test_a_pattern_read_from_a_file_needs_allow_exec() -> None:
    with pytest.raises(ValidationError, match=r"(?s)buffer_pattern.*single quotes"):
        FioParams(extra={"buffer_pattern": "0xdead'/etc/shadow'"})
    assert FioParams(extra={"buffer_pattern": "0xdeadbeef"}).extra


def test_fio_param_values_that_fio_would_cut_are_refused_at_validation() -> None:
    for params in ({"extra": {"description": "a;b"}}, {"extra": {"verify_pattern": "0x1#"}},
                   {"filename": "/dev/sdb;x"}):
        with pytest.raises(ValidationError, match="start a comment"):
            FioParams(**params)


def test_allow_exec_is_said_in_the_findings() -> None:
    p = FioParams(allow_exec=True, extra={"exec_prerun": "sync"})
    notes = [f for f in findings(p) if f.path == "allow_exec"]
    assert len(notes) == 1 and notes[0].level == "warning"
    assert "extra.exec_prerun" in notes[0].message
    assert not [f for f in findings(FioParams()) if f.path == "allow_exec"]


def test_a_user_job_file_with_exec_options_is_refused_unless_allowed(tmp_path: Path) -> None:
    job = tmp_path / "j.fio"
    job.write_text("[global]\nioengine=psync\n[j]\nrw=read\nexec_postrun=rm -rf /x\n"
                   "include other.fio\n")
    errors = [f.message for f in findings(FioParams(job_file=str(job))) if f.level == "error"]
    assert any("line 5: exec_postrun" in m for m in errors)
    assert any("line 6: include" in m for m in errors)
    allowed = findings(FioParams(job_file=str(job), allow_exec=True))
    assert not [f for f in allowed if f.level == "error" and "allow_exec" in f.message]
    # Read again when the trial starts: a file changed since validation is refused there.
    with pytest.raises(ConfigError, match="line 5: exec_postrun"):
        adapt_user_job(job.read_text(), 0, 5, "/d")
    text = adapt_user_job(job.read_text(), 0, 5, "/d", allow_exec=True)
    assert [o.key for o in scan_job_file(text)].count("exec_postrun") == 1


def test_redis_conf_refuses_directives_that_load_code() -> None:
    with pytest.raises(ValidationError, match="loadmodule loads a shared object"):
        RedisParams(redis_conf={"loadmodule": "/tmp/evil.so"})


# ----------------------------------------------------------------------------- names

SCENARIO = """\
version: 1
name: inj
topology:
  storage:
    count: 1
workload:
  driver: fio
  params:
    rw: randread
{params}phases:
  warmup: 0s
  steady: 1s
{rest}"""


def _files(tmp_path: Path, params: str = "", rest: str = "",
           node: str = "guest1") -> tuple[Path, Path]:  # fmt: skip
    sc = tmp_path / "s.yaml"
    sc.write_text(SCENARIO.format(params=params, rest=rest))
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"version": 1, "name": "l", "nodes": {
        node: {"address": "127.0.0.2", "roles": ["storage"]}}}))
    return sc, lab


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """The CLI as a user runs it (errors printed by its entry point): (exit code, output)."""

    def call(*args: str) -> tuple[int, str]:
        with pytest.raises(SystemExit) as done:
            main(list(args))
        out = capsys.readouterr()
        return int(done.value.code or 0), out.out + out.err

    return call


def test_a_node_name_that_would_inject_fio_options_fails_validate_located(
    tmp_path: Path, run_cli: Any
) -> None:
    sc, lab = _files(tmp_path, node=PAYLOAD)
    code, out = run_cli("validate", str(sc), "--lab", str(lab))
    assert code == 2, out
    # Located at the key, the name shown escaped (one line, no raw control character).
    assert re.search(rf"{re.escape(str(lab))}:\d+:\d+: nodes\.guest1\\n\[global\]", out), out
    assert "is refused: letters, digits and _ . -" in out
    assert "\n[global]" not in out
    code, _ = run_cli("validate", str(sc), "--lab", str(_files(tmp_path)[1]))
    assert code == 0


@pytest.mark.parametrize("name", ["a b", "../x", "a/b", "-x", "x\x1b[2J", "", "n\n"])
def test_lab_names_that_reach_guests_are_one_plain_word(name: str) -> None:
    for section, body in (("nodes", {"address": "h"}), ("jump_hosts", {"address": "h"}),
                          ("hosts", {"address": "h"}), ("profiles", {})):
        with pytest.raises(ValidationError, match="refused"):
            Lab.model_validate({"version": 1, "name": "l", section: {name: body}})


def test_workdir_is_a_plain_absolute_path() -> None:
    for bad in ("rel/dir", "/tmp/a b", "/tmp/a;b", "/tmp/../etc", "/tmp/x:y", "/tmp/x\n"):
        with pytest.raises(ValidationError, match="workdir"):
            Lab.model_validate({"version": 1, "name": "l", "defaults": {"workdir": bad}})
    lab = Lab.model_validate({"version": 1, "name": "l", "defaults": {"workdir": "/var/tmp/v-1"}})
    assert lab.defaults.workdir == "/var/tmp/v-1"


def test_existing_vm_names_and_group_names_are_checked(
    tmp_path: Path, run_cli: Any
) -> None:
    sc, _ = _files(tmp_path)
    text = sc.read_text().replace(
        "    count: 1\n", f"    count: 1\n    vm:\n      existing: [{PAYLOAD!r}]\n".replace(
            "'", '"'))
    sc.write_text(text)
    code, out = run_cli("validate", str(sc))
    assert code == 2 and re.search(r"s\.yaml:\d+:\d+: topology\.storage\.vm\.existing\.0", out)
    sc.write_text(SCENARIO.format(params="", rest="").replace("  storage:", '  "g\\n":'))
    code, out = run_cli("validate", str(sc))
    assert code == 2 and "group name" in out


def test_a_vm_guest_name_is_checked_where_it_enters() -> None:
    lab = Lab.model_validate({"version": 1, "name": "l"})
    assert vm_guest_spec(lab, "web-1", "web-1", "10.0.0.5").name == "web-1"
    with pytest.raises(ConfigError, match="guest name"):
        vm_guest_spec(lab, PAYLOAD, "vm", "10.0.0.5")


# ----------------------------------------------------------------------------- scenario


def test_exec_prerun_in_extra_is_refused_at_validate_located(
    tmp_path: Path, run_cli: Any
) -> None:
    sc, lab = _files(tmp_path, params="    extra:\n      exec_prerun: touch PWNED\n")
    code, out = run_cli("validate", str(sc), "--lab", str(lab))
    assert code == 2
    assert f"{sc}:11:7: workload.params.extra.exec_prerun:" in out and "allow_exec" in out


def test_exec_prerun_through_set_is_refused(
    tmp_path: Path, run_cli: Any
) -> None:
    sc, lab = _files(tmp_path)
    code, out = run_cli("validate", str(sc), "--lab", str(lab),
                     "--set", "workload.params.extra.exec_prerun=touch PWNED")
    assert code == 2 and "allow_exec" in out
    assert ("--set workload.params.extra.exec_prerun=touch PWNED: "
            "workload.params.extra.exec_prerun: exec_prerun runs a shell command") in out
    code, out = run_cli("validate", str(sc), "--lab", str(lab),
                        "--set", "workload.params.extra.exec_prerun=touch PWNED",
                        "--set", "workload.params.allow_exec=true")
    assert code == 0, out


def test_exec_prerun_through_a_factor_path_is_refused(
    tmp_path: Path, run_cli: Any
) -> None:
    rest = ("factors:\n  hook:\n    path: workload.params.extra.exec_prerun\n"
            "    levels: [sync, touch PWNED]\n")
    sc, lab = _files(tmp_path, rest=rest)
    code, out = run_cli("validate", str(sc), "--lab", str(lab))
    assert code == 2 and "allow_exec" in out
    # Located at the level that sets it (both levels do).
    assert f"{sc}:16:14: workload.params.extra.exec_prerun: exec_prerun" in out
    assert f"{sc}:16:20: workload.params.extra.exec_prerun: exec_prerun" in out


def test_allow_exec_lets_it_through_and_the_plan_says_so(
    tmp_path: Path, run_cli: Any
) -> None:
    sc, lab = _files(tmp_path, params="    allow_exec: true\n    extra:\n"
                                      "      exec_prerun: sync\n")
    code, out = run_cli("plan", str(sc), "--lab", str(lab))
    assert code == 0, out
    assert "warning: workload.params.allow_exec: allow_exec is on" in out
    assert "extra.exec_prerun" in out
    code, out = run_cli("plan", str(sc), "--lab", str(lab), "--json")
    assert code == 0 and '"allow_exec": true' in out


def test_the_report_scenario_section_shows_allow_exec(tmp_path: Path) -> None:
    from tests.analysis_runs import add_run, scenario_doc
    from vbench.report.build import render_report
    from vbench.results.store import Store

    sc = scenario_doc("exec")
    sc["workload"]["params"] = {"rw": "randread", "allow_exec": True,
                                "extra": {"exec_prerun": "sync"}}
    with Store.open(f"sqlite:///{tmp_path}/s.db", tmp_path) as store:
        run = add_run(store, "20270101-000000-00000001", [({}, {"ops": [1.0, 2.0]})],
                      scenario=sc)  # fmt: skip
        html = render_report(store, [run], "html")
    section = html[html.index("<caption>Workload parameters</caption>"):]
    section = section[: section.index("</table>")]
    assert "<td>allow_exec</td><td>yes</td>" in section and "exec_prerun" in section
