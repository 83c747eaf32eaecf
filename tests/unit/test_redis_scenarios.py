"""The redis scenarios validate and plan; optional roles; errors located in the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vbench.cli import cli
from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "scenarios" / "redis-scaleout.yaml"
STUDY_LAB = ROOT / "examples" / "labs" / "redis-3host.yaml"
LOCAL = ROOT / "examples" / "redis-local.yaml"
LOCAL_LAB = ROOT / "examples" / "labs" / "local.yaml"


def test_study_plan_shows_the_published_shape() -> None:
    res = CliRunner().invoke(cli, ["plan", str(STUDY), "--lab", str(STUDY_LAB)])
    assert res.exit_code == 0, res.output
    text = res.output
    point = text.split("point 2: deployment=native, layout=scale-out")[1].split("\npoint 3")[0]
    assert point.count("on servers: redis-server ") == 8
    assert point.count("on proxies: nutcracker ") == 1
    assert point.count("on proxies: haproxy ") == 1
    bench = [ln for ln in point.splitlines() if "redis-benchmark" in ln]
    assert len(bench) == 8
    assert all("-c 100 -P 30" in ln and "-h '<proxies>' -p 6380" in ln for ln in bench)
    assert sum("-t get" in ln for ln in bench) == 6 and sum("-t set" in ln for ln in bench) == 2
    assert "servers: h3" in point and "proxies: h2" in point and "clients: h1" in point


def test_study_plan_covers_every_mode_and_binds_the_vms() -> None:
    plan = build_plan(load_scenario(STUDY), load_lab(STUDY_LAB))
    labels = [(p.labels["deployment"], p.labels["layout"]) for p in plan.points]
    assert len(labels) == 10 and plan.repeat == 5
    assert {d for d, _ in labels} == {"native", "native-pinned", "docker", "vm", "docker-vm"}
    vm = next(p for p in plan.points if p.labels == {"deployment": "vm", "layout": "scale-out"})
    assert vm.guests["servers"] == tuple(f"redis-vm{i}" for i in range(1, 9))
    base = next(p for p in plan.points if p.labels == {"deployment": "native",
                                                       "layout": "baseline"})
    assert "proxies" not in base.guests  # the proxy tier is off: no guests, no tools
    pinned = next(p for p in plan.points if p.labels["deployment"] == "native-pinned")
    assert pinned.params["pin"]["numa_node"] == 0
    assert "taskset" in pinned.workload.tools()["servers"]
    speedup = next(d for d in plan.scenario.derived if d.kind == "speedup")
    assert (speedup.metric, speedup.baseline, speedup.target, speedup.ideal) == (
        "ops_per_sec", {"layout": "baseline"}, {"layout": "scale-out"}, 8,
    )  # fmt: skip


def test_local_example_plans_on_the_local_lab() -> None:
    plan = build_plan(load_scenario(LOCAL), load_lab(LOCAL_LAB))
    assert [p.labels["layout"] for p in plan.points] == ["baseline", "scale-out"]
    assert plan.repeat >= 3
    assert plan.points[1].guests == {
        "servers": ("guest1",), "proxies": ("guest2",), "clients": ("guest2",),
    }  # fmt: skip
    assert plan.estimated_seconds < 90  # the integration tests run it


def _write(tmp_path: Path, params: str, topology: str | None = None) -> Path:
    topo = topology or "  servers: {count: 1}\n  clients: {count: 1}\n"
    path = tmp_path / "s.yaml"
    path.write_text(
        "version: 1\nname: t\ntopology:\n" + topo
        + "workload:\n  driver: redis_scaleout\n  params:\n" + params
        + "phases: {steady: 1s}\n"
    )
    return path


def test_a_scenario_without_proxies_needs_no_proxies_group(tmp_path: Path) -> None:
    path = _write(tmp_path, "    twemproxy: false\n    haproxy: false\n")
    plan = build_plan(load_scenario(path))
    assert set(plan.points[0].guests) == {"servers", "clients"}


def test_a_proxy_tier_without_a_proxies_group_is_located(tmp_path: Path) -> None:
    path = _write(tmp_path, "    haproxy: false\n")
    with pytest.raises(ConfigValidationError) as info:
        build_plan(load_scenario(path))
    text = str(info.value.issues[0])
    assert "workload.roles" in text and "role 'proxies' is used" in text


@pytest.mark.parametrize(
    ("params", "where", "message"),
    [
        ("    pipeline: 0\n", "s.yaml:9:15: workload.params.pipeline", "greater than or equal"),
        ("    mix: {get: 60, set: 30}\n", "workload.params.mix", "sums to 90 %"),
        ("    servers: 200\n", "workload.params.server_ports", "200 redis-server instances"),
    ],
)
def test_bad_parameters_are_located_in_the_file(
    tmp_path: Path, params: str, where: str, message: str
) -> None:
    path = _write(tmp_path, params + "    twemproxy: false\n    haproxy: false\n")
    with pytest.raises(ConfigValidationError) as info:
        build_plan(load_scenario(path))
    text = "\n".join(str(i) for i in info.value.issues)
    assert where in text and message in text


def test_drivers_command_lists_the_roles() -> None:
    res = CliRunner().invoke(cli, ["drivers", "--json"])
    assert res.exit_code == 0, res.output
    redis = next(d for d in json.loads(res.output) if d["name"] == "redis_scaleout")
    assert redis["roles"] == ["servers", "proxies", "clients"]
    assert "pipeline" in redis["params"] and "mix" in redis["params"]
