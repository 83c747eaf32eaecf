"""Hostile scenario and lab files fail fast and located (issue 18, items 3 and 4): the YAML
loader bounds nesting, alias expansion and size; the factor matrix is bounded before it
is built, and built without a deep copy of the scenario per point."""

from __future__ import annotations

import copy
import io
import re
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from vbench.config import yamlsrc
from vbench.config.load import load_scenario
from vbench.config.matrix import expand
from vbench.config.yamlsrc import MAX_DEPTH, MAX_VALUES, load_yaml_file, load_yaml_text
from vbench.errors import EXIT_CONFIG, ConfigValidationError

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
LOCATED = re.compile(r"^\S.*:(\d+):(\d+): ")


def run_cli(*argv: str) -> tuple[int, str]:
    """``vbench ARGV`` in process, as the console script runs it: (exit code, stderr)."""
    from vbench.cli import main

    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out), pytest.raises(SystemExit) as exc:
        main(list(argv))
    code = exc.value.code
    return (code if isinstance(code, int) else 0), err.getvalue()


def issue_of(text: str) -> str:
    with pytest.raises(ConfigValidationError) as exc:
        load_yaml_text(text, "f.yaml")
    assert len(exc.value.issues) == 1, exc.value.issues
    return str(exc.value.issues[0])


def laughs(levels: int) -> str:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


# -- the loader ----------------------------------------------------------------------------


def test_deep_nesting_is_refused_at_its_line_and_column_not_a_recursion_error() -> None:
    text = "version: 1\nx: " + "[" * 500 + "]" * 500 + "\n"
    assert issue_of(text) == (
        f"f.yaml:2:{4 + MAX_DEPTH - 1}: nested deeper than {MAX_DEPTH} levels "
        "(a limit of vbench's config loader, see docs/scenarios.md)"
    )


def test_nesting_up_to_the_limit_loads() -> None:
    depth = MAX_DEPTH - 1  # the root mapping is one level
    src = load_yaml_text("x: " + "[" * depth + "1" + "]" * depth + "\n", "f.yaml")
    value = src.data["x"]
    for _ in range(depth):
        value = value[0]
    assert value == 1


def test_a_recursive_alias_is_refused_where_the_alias_is() -> None:
    assert issue_of("version: 1\nx: &a\n  - 1\n  - *a\n") == (
        "f.yaml:4:5: recursive alias: a value that contains itself"
    )


def test_billion_laughs_is_refused_quickly_where_the_expansion_crosses_the_limit() -> None:
    text = laughs(9)  # 9^9 = 387 million values in 500 bytes
    start = time.process_time()
    message = issue_of(text)
    assert time.process_time() - start < 2.0  # the old loader walked every expansion
    assert f"more than {MAX_VALUES:,} values once aliases are expanded" in message
    assert message.startswith("f.yaml:6:")  # l5: 9^6 values, the first anchor over


def test_aliases_under_the_limit_load_shared_and_are_located_at_their_use() -> None:
    text = laughs(5) + "use:\n  - *l3\n  - *l3\n"  # 9^4 = 6,561 values, twice more
    start = time.process_time()
    src = load_yaml_text(text, "f.yaml")
    assert time.process_time() - start < 2.0
    assert src.data["use"][0] is src.data["use"][1] is src.data["l3"]
    assert src.locate(("use", 1)) == ("f.yaml", 8, 5)
    # below an alias's use, the nearest known place is the alias itself
    assert src.locate(("use", 1, 3, 2)) == ("f.yaml", 8, 5)


def test_expansion_over_the_limit_through_one_anchor_used_many_times() -> None:
    item = "[" + ", ".join(["x"] * 1000) + "]"
    uses = ", ".join(["*a"] * (MAX_VALUES // 1000 + 1))
    message = issue_of(f"a: &a {item}\nb: [{uses}]\n")
    assert message.startswith("f.yaml:2:") and "values once aliases are expanded" in message


def test_expanded_depth_counts_nesting_through_aliases() -> None:
    half = MAX_DEPTH // 2 + 1
    text = f"a: &a {'[' * half}1{']' * half}\nb: {'[' * half}*a{']' * half}\n"
    assert "nested deeper than" in issue_of(text)


def test_a_nul_byte_is_reported_at_its_line_and_column() -> None:
    assert issue_of("version: 1\nname: ab\0c\n").startswith(
        "f.yaml:2:9: a NUL character is not allowed in a YAML file"
    )


def test_a_control_character_is_reported_at_its_line_and_column() -> None:
    assert issue_of("version: 1\nname: a\x1bb\n").startswith(
        "f.yaml:2:8: control character U+001B is not allowed"
    )


def test_bytes_that_are_not_utf8_are_reported_at_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_bytes(b"version: 1\nname: \xc3\xa9\xff\n")  # é, then a stray byte
    with pytest.raises(ConfigValidationError) as exc:
        load_yaml_file(p)
    assert str(exc.value) == f"{p}:2:8: byte 0xff is not UTF-8 text (save the file as UTF-8)"


def test_a_file_over_the_size_limit_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    p = tmp_path / "big.yaml"
    p.write_text("# padding\n" * (yamlsrc.MAX_BYTES // 10 + 10))
    with pytest.raises(ConfigValidationError) as exc:
        load_yaml_file(p)
    assert re.match(rf"{re.escape(str(p))}:\d+:\d+: the file is larger than 1024 KiB",
                    str(exc.value))


def test_a_value_python_cannot_build_is_located_not_an_internal_error() -> None:
    assert issue_of("version: 1\nname: 2024-13-45\n").startswith(
        "f.yaml:2:7: cannot read this value: month must be in 1..12"
    )
    assert issue_of("a: !!int abc\n").startswith("f.yaml:1:4: cannot read this value")


def test_a_mapping_as_a_key_is_refused_located() -> None:
    assert issue_of("version: 1\n? [a, b]\n: 1\n") == (
        "f.yaml:2:3: a key must be a plain value such as a name"
    )


@pytest.mark.parametrize(
    "text",
    [
        "x: " + "[" * 500 + "]" * 500,
        "x: &a [*a]",
        "name: a\0b",
        laughs(9),
    ],
    ids=["deep", "recursive", "nul", "laughs"],
)
def test_cli_validate_exits_2_located_for_hostile_files(tmp_path: Path, text: str) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(QUICKSTART.read_text() + text + "\n")
    code, err = run_cli("validate", str(p))
    assert code == EXIT_CONFIG, err
    assert err.startswith(f"{p}:") and LOCATED.match(err), err
    assert "internal error" not in err and "Traceback" not in err


def test_a_deep_set_value_is_refused_at_the_set_not_the_file() -> None:
    deep = "[" * 500 + "]" * 500
    code, err = run_cli("validate", str(QUICKSTART), "--set", f"x={deep}")
    assert code == EXIT_CONFIG, err
    assert err.startswith("--set x=[[[") and f":1:{MAX_DEPTH + 1}: nested deeper than" in err


def test_set_errors_are_located_at_the_set_even_below_lines_of_the_file() -> None:
    # workload.params.iodepth has a line in the file, but the --set replaced params
    code, err = run_cli("validate", str(QUICKSTART), "--set", "workload.params={iodepth: x}")
    assert code == EXIT_CONFIG
    assert (
        "--set workload.params={iodepth: x}: workload.params.iodepth: expected a whole "
        "number, got 'x'"
    ) in err.splitlines()
    assert "quickstart.yaml:25:" not in err  # iodepth's line in the file


def test_messages_show_dates_as_written_not_as_python_reprs(tmp_path: Path) -> None:
    code, err = run_cli("validate", str(QUICKSTART), "--set", "name=2024-01-01")
    assert code == EXIT_CONFIG
    assert "name: expected a string, got 2024-01-01" in err and "datetime" not in err


# -- the matrix ----------------------------------------------------------------------------

FACTORS = {
    "bs": [f"{i + 1}k" for i in range(10)],
    "iodepth": list(range(1, 11)),
    "numjobs": list(range(1, 11)),
    "rwmixread": list(range(10, 20)),
    "size": [f"{i + 1}m" for i in range(10)],
    "rate_iops": list(range(100, 110)),
    "blockalign": [f"{i + 1}k" for i in range(10)],
}


def matrix_file(tmp_path: Path, factors: int, settings: str = "") -> Path:
    import yaml

    data = yaml.safe_load(QUICKSTART.read_text())
    data.pop("derived")
    data["factors"] = {k: FACTORS[k] for k in list(FACTORS)[:factors]}
    if settings:
        data["settings"] = yaml.safe_load(settings)
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def test_seven_factors_of_ten_levels_are_refused_before_expansion(tmp_path: Path) -> None:
    p = matrix_file(tmp_path, 7)
    loaded = load_scenario(p)
    start = time.process_time()
    with pytest.raises(ConfigValidationError) as exc:
        expand(loaded.model, loaded.source)
    assert time.process_time() - start < 1.0  # the old expansion ran for minutes
    line = next(i for i, t in enumerate(p.read_text().splitlines(), 1) if t == "factors:")
    assert str(exc.value) == (
        f"{p}:{line}:1: factors: the factors make 10,000,000 points (10 × 10 × 10 × 10 × 10 "
        "× 10 × 10), more than settings.max_points (10,000); use fewer levels, zip or a "
        "find-max search, or raise settings.max_points if you mean it"
    )


def test_max_points_can_be_lowered_or_raised(tmp_path: Path) -> None:
    loaded = load_scenario(matrix_file(tmp_path, 2, "{max_points: 99}"))
    with pytest.raises(ConfigValidationError, match=r"100 points \(10 × 10\), more than"):
        expand(loaded.model, loaded.source)
    loaded = load_scenario(matrix_file(tmp_path, 2, "{max_points: 100}"))
    assert len(expand(loaded.model, loaded.source)) == 100
    code, _ = run_cli("validate", str(matrix_file(tmp_path, 3)), "--set",
                      "settings.max_points=999")
    assert code == EXIT_CONFIG


def test_points_share_the_scenario_data_instead_of_deep_copies(tmp_path: Path) -> None:
    loaded = load_scenario(matrix_file(tmp_path, 2))
    before = copy.deepcopy(loaded.source.data)
    points = expand(loaded.model, loaded.source)
    assert loaded.source.data == before  # the scenario's own data is left alone
    a, b = points[0], points[57]
    assert a.source is not None and b.source is not None
    # untouched sections are the very same objects; the overridden path is copied
    assert a.source.data["phases"] is b.source.data["phases"] is loaded.source.data["phases"]
    assert a.source.data["workload"]["params"] is not b.source.data["workload"]["params"]
    assert (a.source.data["workload"]["params"]["bs"],
            b.source.data["workload"]["params"]["bs"]) == ("1k", "6k")
    assert b.scenario is not None and b.scenario.workload.params["iodepth"] == 8
    # each level's value is located at its level, the rest at the file's lines
    assert b.source.locate(("workload", "params", "iodepth"))[1] == (
        loaded.source.locate(("factors", "iodepth", "levels", 7))[1]
    )
    assert b.source.locate(("phases", "steady")) == loaded.source.locate(("phases", "steady"))


def test_a_set_without_a_path_is_one_line_naming_the_set() -> None:
    code, err = run_cli("validate", str(QUICKSTART), "--set", "=1")
    assert code == EXIT_CONFIG
    assert err == "--set =1: empty path (expected PATH=VALUE, e.g. repeat=5)\n"


def test_a_factor_level_setting_below_a_scalar_is_located_at_the_level(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(QUICKSTART.read_text().replace(
        "  bs: [4k, 64k]",
        "  bs: [4k, 64k]\n  x:\n    levels:\n      - {label: a, set: {phases.steady.y: 1}}",
    ))
    loaded = load_scenario(p)
    with pytest.raises(ConfigValidationError) as exc:
        expand(loaded.model, loaded.source)
    line, text = next((i, t) for i, t in enumerate(p.read_text().splitlines(), 1)
                      if "phases.steady.y" in t)
    col = text.index("phases.steady.y") + 1
    assert str(exc.value) == (
        f"{p}:{line}:{col}: factors.x.levels.0.set.phases.steady.y: phases.steady is not a "
        "mapping"
    )
