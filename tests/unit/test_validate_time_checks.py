"""What used to be found only inside a trial is refused by `vbench validate` (issue 28,
item 5), located: a vdbench parameter file that does not exist, a CloudStone `bind` that
is not an address, a wheelhouse folder that does not exist, and Content Library library,
item and VM names holding a newline or a path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_config_limits import ROOT, run_cli
from vbench.config.load import set_label
from vbench.errors import EXIT_CONFIG

CLOUDSTONE = ROOT / "examples" / "cloudstone-local.yaml"
LIBRARY = ROOT / "examples" / "content-library-sim.yaml"

VDBENCH = """\
version: 1
name: vd
topology: {target: {count: 1}}
workload:
  driver: vdbench
  params:
    parmfile: {parmfile}
phases: {steady: 10s}
"""


def test_a_vdbench_parmfile_that_does_not_exist_is_refused_at_its_line(
    tmp_path: Path
) -> None:
    scenario = tmp_path / "vd.yaml"
    scenario.write_text(VDBENCH.replace("{parmfile}", str(tmp_path / "nope.parm")))
    code, err = run_cli("validate", str(scenario))
    assert code == EXIT_CONFIG
    assert err.startswith(f"{scenario}:7:15: workload.params.parmfile: no such file on the "
                          f"controller: {tmp_path / 'nope.parm'}"), err
    (tmp_path / "nope.parm").write_text("sd=sd1,lun=/dev/null\n")
    code, err = run_cli("validate", str(scenario))
    assert code == 0, err


@pytest.mark.parametrize("bind", ["x;touch /tmp/pwned", "--logfile=/tmp/x", "a b", "::1",
                                  "127.0.0.1:80", "10.0.0.1 default_server"])
def test_a_cloudstone_bind_that_is_not_an_address_is_refused(bind: str) -> None:
    given = f"workload.params.bind={bind!r}"
    code, err = run_cli("validate", str(CLOUDSTONE), "--set", given)
    assert code == EXIT_CONFIG, err
    assert err.startswith(f"{set_label(given)}: workload.params.bind: "), err


def test_a_cloudstone_bind_that_is_an_address_or_a_name_is_accepted() -> None:
    for bind in ("127.0.0.2", "web-1.lab.example"):
        code, err = run_cli("validate", str(CLOUDSTONE), "--set", f"workload.params.bind={bind}")
        assert code == 0, err


def test_a_wheelhouse_that_does_not_exist_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VBENCH_WHEELHOUSE", raising=False)
    missing = tmp_path / "wheels"
    given = f"workload.params.wheelhouse={missing}"
    code, err = run_cli("validate", str(CLOUDSTONE), "--set", given)
    assert code == EXIT_CONFIG
    assert err.startswith(f"{set_label(given)}: workload.params.wheelhouse: wheelhouse folder "
                          f"'{missing}' does not exist"), err
    missing.mkdir()
    assert run_cli("validate", str(CLOUDSTONE), "--set", given)[0] == 0
    # The environment's folder overrides the parameter: it is the one checked.
    monkeypatch.setenv("VBENCH_WHEELHOUSE", str(tmp_path / "other"))
    code, err = run_cli("validate", str(CLOUDSTONE))
    assert code == EXIT_CONFIG and "$VBENCH_WHEELHOUSE folder" in err, err
    # An existing Locust needs no wheelhouse.
    code, err = run_cli("validate", str(CLOUDSTONE), "--set",
                        "workload.params.locust_command=/opt/locust/bin/locust")
    assert code == 0, err


@pytest.mark.parametrize(("old", "new", "where"), [
    ("{op: create_library, library: pub, publish: true}",
     '{op: create_library, library: "pub\\nx", publish: true}', "steps.0.library"),
    ("library: sub, publisher: pub,", 'library: sub, publisher: "../pub",', "steps.3.publisher"),
    ("label: golden, vm: DC0_C0_RP0_VM0}", 'label: golden, vm: "../../vm"}', "steps.5.vm"),
    ("item: golden, count: 2}", 'item: "gold\\ren", count: 2}', "steps.6.item"),
    ("item: golden, count: 2}", "item: .., count: 2}", "steps.6.item"),
])
def test_content_library_names_with_a_newline_or_a_path_are_refused(
    tmp_path: Path, old: str, new: str, where: str
) -> None:
    text = LIBRARY.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    scenario = tmp_path / "cl.yaml"
    scenario.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if new in ln)
    code, err = run_cli("validate", str(scenario))
    assert code == EXIT_CONFIG, err
    assert err.startswith(f"{scenario}:{line}:"), err
    assert f": workload.params.{where}: " in err.splitlines()[0], err
