"""Files a scenario names on the controller (an esxtop config, a vdbench parameter file)
are checked by validate: a name the file system cannot even look up (too long, a path
through a plain file, a NUL character) is a located problem of the field, never an
internal error (exit 3, OSError from stat) — found by the configuration fuzz test."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.collectors.esxtop import Esxtop, EsxtopOptions
from vbench.config.localfiles import file_problem, shown_path


def test_a_readable_file_has_no_problem(tmp_path: Path) -> None:
    f = tmp_path / "esxtoprc"
    f.write_text("x\n")
    assert file_problem(f) is None


@pytest.mark.parametrize(("name", "said"), [
    ("missing", "not found"),
    ("x" * 5000, "File name too long"),
    ("plain/inside", "Not a directory"),
    ("a\x00b", "NUL character"),
    (".", "is a directory"),
])
def test_a_file_that_cannot_be_read_says_why(tmp_path: Path, name: str, said: str) -> None:
    (tmp_path / "plain").write_text("")
    problem = file_problem(tmp_path / name)
    assert problem is not None and said in problem


def test_a_long_name_is_shortened_when_shown() -> None:
    shown = shown_path(Path("/" + "x" * 5000))
    assert len(shown) < 160 and "5001 characters" in shown


@pytest.mark.parametrize("config", ["x" * 5000, "/etc/hostname/x", "a\x00b", "/nonexistent-rc"])
def test_the_esxtop_config_is_a_problem_of_the_field_not_an_internal_error(config: str) -> None:
    problems = Esxtop.check(EsxtopOptions(config=config), 5.0)
    said = [p for p in problems if p.startswith("esxtop config ")]
    assert len(said) == 1 and len(said[0]) < 250, problems


@pytest.mark.parametrize("name", ["a\x00b", "x" * 5000])
def test_a_secret_file_name_that_cannot_be_looked_up_is_a_secret_error(name: str) -> None:
    """A lab's ``${file:…}`` password holding a NUL (the reference's pattern allows it)
    raised ValueError when a connection resolved it: an internal error of lab check/run."""
    from vbench.config.secrets import SecretError, resolve_secret

    with pytest.raises(SecretError) as caught:
        resolve_secret("${file:" + name + "}", "nodes.g1.password")
    assert caught.value.where == "nodes.g1.password" and len(caught.value.reason) < 250


def test_a_job_or_run_config_file_name_of_thousands_of_characters_is_shown_cut() -> None:
    """fio's job_file and faban's run_config said 'cannot read NAME: [Errno 36] … NAME'
    with a 5,000-character name twice: 10 KB of one error line."""
    from vbench.workloads.faban import FabanWorkload
    from vbench.workloads.faban.params import FabanParams
    from vbench.workloads.fio.jobs import FioParams
    from vbench.workloads.fio.pitfalls import _job_file_findings

    name = "/" + "y" * 5000
    said = [f.message for f in _job_file_findings(FioParams(job_file=name))]
    said += [f.message for f in FabanWorkload.findings(FabanParams(command=["x"], run_config=name))]
    assert len(said) == 2 and all(len(s) < 300 and "File name too long" in s for s in said), said
