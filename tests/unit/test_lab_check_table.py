"""`vbench lab check` names the vCenter of every hygiene finding (issue 29): in a lab of
several vCenters, each may have a host or cluster of the same name — every vcsim has a
DC0_C0_H0 — and a row "host DC0_C0_H0" would not say which one is in balanced power."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from vbench.cli.vsphere_cmds import hygiene_rows, show_checks
from vbench.vsphere.hygiene_rules import Finding

FOUND = [
    Finding("power_policy", "host DC0_C0_H0", "warn", "balanced",
            "host DC0_C0_H0: power policy balanced (wanted high-performance)", "vc1"),
    Finding("power_policy", "host DC0_C0_H0", "ok", "high-performance",
            "host DC0_C0_H0: power policy high-performance", "vc2"),
    Finding("drs", "cluster DC0_C0", "fail", "fullyAutomated",
            "DRS fullyAutomated on DC0_C0: it may migrate the run's VMs", "vc2"),
    Finding("clock", "vcenter vc2", "ok", "", "hosts within 1 s of the controller", "vc2"),
    Finding("clock", "guests", "ok", "", "guest clocks from the controller's: g1 +0.0 s"),
]


def test_every_hygiene_row_names_its_vcenter() -> None:
    rows = hygiene_rows(FOUND)
    assert [r.target for r in rows] == [
        "host DC0_C0_H0 (vcenter vc1)", "host DC0_C0_H0 (vcenter vc2)",
        "cluster DC0_C0 (vcenter vc2)",
        "vcenter vc2",  # a vCenter's own finding is not named twice
        "guests",  # the guests' clocks are no vCenter's
    ]
    assert [(r.ok, r.level) for r in rows[:3]] == [(True, "warning"), (True, "info"),
                                                   (False, "info")]


def test_the_table_on_a_terminal_names_the_vcenters() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=220)
    code = show_checks(hygiene_rows(FOUND), "lab check: lab.yaml", console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert code == 3  # the DRS finding fails
    rows = [line for line in text.splitlines() if "DC0_C0_H0 (vcenter" in line]
    assert len(rows) == 2
    assert "vcenter vc1" in rows[0] and "warn" in rows[0]
    assert "vcenter vc2" in rows[1] and "pass" in rows[1]
    assert "3 passed, 1 warnings, 1 failed" in text


def test_the_lines_of_a_pipe_name_the_vcenters(capsys: pytest.CaptureFixture[str]) -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    show_checks(hygiene_rows(FOUND), "lab check: lab.yaml", console)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "warn  host DC0_C0_H0 (vcenter vc1)  hygiene power_policy: host DC0_C0_H0: power "
        "policy balanced (wanted high-performance)",
        "pass  host DC0_C0_H0 (vcenter vc2)  hygiene power_policy: host DC0_C0_H0: power "
        "policy high-performance",
        "FAIL  cluster DC0_C0 (vcenter vc2)  hygiene drs: DRS fullyAutomated on DC0_C0: it "
        "may migrate the run's VMs",
    ]
