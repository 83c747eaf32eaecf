"""The validator refuses what a careful adversary tried (issue 18, item 7), each at its
file:line:column: absurd durations, unknown fio engines, bad addresses, ports, IP pools,
jump-host chains, unresolvable secrets, nan shares; and says "1 point × 1 trial"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.test_config_limits import QUICKSTART, ROOT, run_cli
from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import EXIT_CONFIG, ConfigValidationError

LAB = """\
version: 1
name: lab
defaults:
  port: 2222
nodes:
  g1:
    address: 10.0.0.1
    roles: [storage]
"""
VCENTER = """\
vcenters:
  vc:
    url: https://vc.example.com/sdk
    user: u
    password: ${env:VC_PW}
"""


def lab_issues(tmp_path: Path, text: str) -> list[str]:
    p = tmp_path / "lab.yaml"
    p.write_text(text)
    with pytest.raises(ConfigValidationError) as exc:
        load_lab(p)
    return [str(i).replace(f"{p}:", "lab.yaml:", 1) for i in exc.value.issues]


def scenario_issues(tmp_path: Path, text: str) -> list[str]:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(p))
    return [str(i).replace(f"{p}:", "s.yaml:", 1) for i in exc.value.issues]


def quickstart_with(old: str, new: str) -> str:
    text = QUICKSTART.read_text()
    assert old in text
    return text.replace(old, new, 1)


# -- scenario values -----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["99999999999999999999h", "31d", "inf", "1e400", "744h"])
def test_durations_over_30_days_are_refused_at_the_field(tmp_path: Path, value: str) -> None:
    issues = scenario_issues(tmp_path, quickstart_with("steady: 3s", f"steady: {value}"))
    assert issues == [f"s.yaml:34:11: phases.steady: '{value}' is longer than 30 days, the "
                      "longest duration vbench accepts"]


def test_a_huge_whole_number_of_seconds_is_refused_not_an_overflow(tmp_path: Path) -> None:
    issues = scenario_issues(tmp_path, quickstart_with("steady: 3s", f"steady: {10 ** 400}"))
    assert len(issues) == 1 and issues[0].startswith("s.yaml:34:11: phases.steady: 1000")
    assert issues[0].endswith("is longer than 30 days, the longest duration vbench accepts")


def test_30_days_is_still_a_duration(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(quickstart_with("steady: 3s", "steady: 30d"))
    assert load_scenario(p).model.phases.steady == 30 * 86400


def test_an_unknown_fio_engine_is_refused_with_the_closest_name(tmp_path: Path) -> None:
    issues = scenario_issues(tmp_path, quickstart_with("ioengine: psync", "ioengine: libaoi"))
    assert issues[0] == (
        "s.yaml:27:15: workload.params.ioengine: 'libaoi' is not an fio I/O engine (did you "
        "mean 'libaio'? common ones: libaio, io_uring, psync, sync, posixaio, mmap, null; see "
        "fio --enghelp)"
    )


@pytest.mark.parametrize("engine", ["io_uring", "posixaio", "mmap", "null", "pvsync2"])
def test_fio_engines_fio_documents_are_accepted(tmp_path: Path, engine: str) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(quickstart_with("ioengine: psync", f'ioengine: "{engine}"'))
    assert build_plan(load_scenario(p)).points[0].params["ioengine"] == engine


def test_a_nan_share_in_a_mix_is_refused_at_its_operation(tmp_path: Path) -> None:
    text = (ROOT / "scenarios" / "redis-scaleout.yaml").read_text()
    text = text.replace("mix: {get: 75, set: 25}", "mix: {get: .nan, set: 100}")
    issues = scenario_issues(tmp_path, text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "mix: {get: .nan" in t)
    assert issues[0] == (
        f"s.yaml:{line}:16: workload.params.mix.get: expected a finite number (not nan or "
        "inf), got nan"
    )


def test_an_infinite_weight_in_a_vcbench_mix_is_refused_at_the_weight() -> None:
    code, err = run_cli("validate", str(ROOT / "examples" / "vcbench-sim.yaml"), "--set",
                        "workload.params.mix={clone: .inf}")
    assert code == EXIT_CONFIG
    assert ("--set workload.params.mix={clone: .inf}: workload.params.mix.clone: expected a "
            "finite number (not nan or inf), got inf") in err.splitlines()


def test_one_point_one_trial_is_said_in_the_singular() -> None:
    from click.testing import CliRunner

    from vbench.cli import cli

    res = CliRunner().invoke(cli, ["validate", str(QUICKSTART), "--set", "repeat=1", "--set",
                                   "factors={}", "--set", "derived=[]"])
    assert "ok — 1 point × 1 trial = 1 trial, estimated" in res.output, res.output
    res = CliRunner().invoke(cli, ["plan", str(QUICKSTART), "--set", "repeat=1"])
    assert "2 points × 1 trial = 2 trials" in res.output, res.output


# -- lab values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ('""', "empty address (expected a host name or IP address)"),
        ("10.0.0.999", "'10.0.0.999' is not a host name or IP address"),
        ('"guest 1"', "'guest 1' is not a host name or IP address"),
        ("-oProxyCommand=x", "'-oProxyCommand=x' is not a host name or IP address"),
    ],
)
def test_empty_or_invalid_node_addresses_are_refused(
    tmp_path: Path, address: str, message: str
) -> None:
    issues = lab_issues(tmp_path, LAB.replace("address: 10.0.0.1", f"address: {address}"))
    assert issues == [f"lab.yaml:7:14: nodes.g1.address: {message}"]


@pytest.mark.parametrize("address", ["db1.example.com", "fe80::1", "10.0.0.1", "esx-01"])
def test_host_names_and_ip_addresses_are_accepted(tmp_path: Path, address: str) -> None:
    p = tmp_path / "lab.yaml"
    p.write_text(LAB.replace("address: 10.0.0.1", f'address: "{address}"'))
    assert load_lab(p).model.nodes["g1"].address == address


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://vc.example.com:99999/sdk", "the port must be a number from 1 to 65535"),
        ("https://vc.example.com:0/sdk", "the port must be a number from 1 to 65535"),
        ("http://vc.example.com/sdk", "only https is supported"),
        ("https://root:pw@vc.example.com/sdk", "a user or password in the url is refused"),
    ],
)
def test_vcenter_urls_the_connection_cannot_use_are_refused(
    tmp_path: Path, url: str, message: str
) -> None:
    text = LAB + VCENTER.replace("https://vc.example.com/sdk", url)
    (issue,) = lab_issues(tmp_path, text)
    assert issue.startswith("lab.yaml:11:10: vcenters.vc.url: ") and message in issue


@pytest.mark.parametrize(
    ("pool", "where", "message"),
    [
        ("[10.0.0.40-10.0.0.11]", "addresses.0", "range '10.0.0.40-10.0.0.11' ends before it "
         "starts"),
        ("[10.0.0.0-10.255.255.255]", "addresses.0", "range '10.0.0.0-10.255.255.255' holds "
         "16,777,216 addresses, more than 65,536 (one pool is at most a /16)"),
        ("[10.1.0.0-10.1.255.255, 10.2.0.1]", "addresses", "the pool holds 65,537 addresses, "
         "more than 65,536"),
        ("[10.0.0.1/24]", "addresses.0", "'10.0.0.1/24' is not an IPv4 address or range (e.g. "
         "10.0.0.11-10.0.0.40)"),
    ],
)
def test_reversed_or_oversized_ip_pools_are_refused(
    tmp_path: Path, pool: str, where: str, message: str
) -> None:
    text = LAB + VCENTER + f"    ip_pool:\n      addresses: {pool}\n"
    (issue,) = lab_issues(tmp_path, text)
    assert re.fullmatch(rf"lab\.yaml:15:\d+: vcenters\.vc\.ip_pool\.{where}: "
                        rf"{re.escape(message)}", issue), issue


def test_ip_pool_netmask_and_gateway_are_checked(tmp_path: Path) -> None:
    text = LAB + VCENTER + ("    ip_pool:\n      addresses: [10.0.0.5]\n"
                            "      netmask: 255.0.255.0\n      gateway: 10.0.0.256\n")
    assert lab_issues(tmp_path, text) == [
        "lab.yaml:16:16: vcenters.vc.ip_pool.netmask: '255.0.255.0' is not a subnet mask (e.g. "
        "255.255.255.0)",
        "lab.yaml:17:16: vcenters.vc.ip_pool.gateway: '10.0.0.256' is not an IPv4 address",
    ]


def test_a_jump_host_with_its_own_jump_is_refused_as_a_chain(tmp_path: Path) -> None:
    text = LAB + ("jump_hosts:\n  outer: {address: 10.9.0.1}\n"
                  "  inner: {address: 10.9.0.2, jump: outer}\n")
    (issue,) = lab_issues(tmp_path, text)
    assert issue.startswith("lab.yaml:11:36: jump_hosts.inner.jump: inner -> outer: vbench "
                            "goes through one jump host only")


def test_a_cycle_of_jump_hosts_is_refused_and_called_one(tmp_path: Path) -> None:
    text = LAB + ("jump_hosts:\n  a: {address: 10.9.0.1, jump: b}\n"
                  "  b: {address: 10.9.0.2, jump: a}\n  c: {address: 10.9.0.3, jump: c}\n")
    issues = lab_issues(tmp_path, text)
    assert [i.split(" vbench")[0] for i in issues] == [
        "lab.yaml:10:32: jump_hosts.a.jump: a -> b -> a: a cycle;",
        "lab.yaml:11:32: jump_hosts.b.jump: b -> a -> b: a cycle;",
        "lab.yaml:12:32: jump_hosts.c.jump: c -> c: a cycle;",
    ]


def test_reference_errors_are_located_at_the_referencing_field(tmp_path: Path) -> None:
    text = (LAB.replace("roles: [storage]", "roles: [storage]\n    jump: bastion")
            + "profiles:\n  fast: {vcenter: vc9, nodes: {g1: g7}}\n"
            + "address_map:\n  10.0.0.1: 'gw:99999'\n")
    assert lab_issues(tmp_path, text) == [
        "lab.yaml:9:11: nodes.g1.jump: jump host 'bastion' is not in jump_hosts (none)",
        "lab.yaml:11:19: profiles.fast.vcenter: vcenter 'vc9' is not in vcenters",
        "lab.yaml:11:36: profiles.fast.nodes.g1: node 'g7' (for g1) is not in nodes",
        "lab.yaml:13:13: address_map.10.0.0.1: 'gw:99999': the port must be a number from 1 "
        "to 65535",
    ]


def test_a_loopback_lab_address_must_be_a_loopback_ip(tmp_path: Path) -> None:
    text = LAB + "local:\n  addresses: [127.0.0.2, 127.evil.com]\n"
    assert lab_issues(tmp_path, text) == [
        "lab.yaml:10:26: local.addresses.1: '127.evil.com' is not a loopback address "
        "(127.0.0.0/8)"
    ]


def test_a_lab_that_is_not_utf8_is_reported_at_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "lab.yaml"
    p.write_bytes(LAB.encode().replace(b"10.0.0.1", b"10.0.\xe90.1"))
    with pytest.raises(ConfigValidationError) as exc:
        load_lab(p)
    assert str(exc.value) == f"{p}:7:19: byte 0xe9 is not UTF-8 text (save the file as UTF-8)"


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("  password: ${env:VB_TEST_UNSET_18}\n", "lab.yaml:5:13: defaults.password"),
        ("    password: ${env:VB_TEST_UNSET_18}\n", "lab.yaml:9:15: nodes.g1.password"),
    ],
)
def test_an_unset_environment_secret_is_located_where_it_is_referenced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, where: str
) -> None:
    from vbench.guest.labspec import guest_spec

    monkeypatch.delenv("VB_TEST_UNSET_18", raising=False)
    text = LAB.replace("  port: 2222\n", "  port: 2222\n" + extra) if extra.startswith(
        "  p") else LAB + extra
    p = tmp_path / "lab.yaml"
    p.write_text(text)
    lab = load_lab(p).model
    with pytest.raises(ConfigValidationError) as exc:
        guest_spec(lab, "g1")
    assert str(exc.value) == (
        f"{where.replace('lab.yaml', str(p))}: environment variable VB_TEST_UNSET_18 is not set"
    )


def test_an_unset_vcenter_password_is_located_at_the_vcenter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vbench.vsphere.connection import target_from_lab

    monkeypatch.delenv("VC_PW", raising=False)
    p = tmp_path / "lab.yaml"
    p.write_text(LAB + VCENTER)
    with pytest.raises(ConfigValidationError) as exc:
        target_from_lab(load_lab(p).model, "vc")
    assert str(exc.value) == f"{p}:13:15: vcenters.vc.password: environment variable VC_PW is " \
        "not set"


# -- found by the fuzzer (tests/unit/test_fuzz_configs.py) ---------------------------------


@pytest.mark.parametrize("memory", [".inf", "1e400", "9" * 400 + "g"])
def test_an_infinite_memory_size_is_refused_not_an_overflow(tmp_path: Path, memory: str) -> None:
    issues = scenario_issues(tmp_path, quickstart_with("memory: 2g", f"memory: {memory}"))
    assert len(issues) == 1 and issues[0].startswith("s.yaml:18:15: topology.storage.vm.memory:")
    assert "is not a memory size (e.g. 4096, 512m, 4g)" in issues[0]


def test_an_infinite_content_library_item_size_is_refused_not_an_overflow(
    tmp_path: Path,
) -> None:
    text = (ROOT / "examples" / "content-library-sim.yaml").read_text()
    issues = scenario_issues(tmp_path, text.replace("item_size: 8m", "item_size: 1e400"))
    assert issues[0] == ("s.yaml:19:16: workload.params.item_size: '1e400' is not a size (e.g. "
                         "4096, 64m, 1g)")


def test_a_message_quoting_a_hostile_value_stays_one_line_without_escapes() -> None:
    code, err = run_cli("validate", str(QUICKSTART), "--set",
                        'qos=[{metric: "x\\n[global]\\u001b[2J", op: "<=", threshold: 1}]')
    assert code == EXIT_CONFIG
    assert "\x1b" not in err and "[global]" in err
    assert all(line.startswith("--set qos=") for line in err.splitlines()), err


def test_an_unknown_default_jump_host_is_refused_in_a_lab_without_nodes(tmp_path: Path) -> None:
    # A lab of cloned VMs only: the default jump reaches the clones, so a name that is not
    # in jump_hosts is refused at load, not after the run has cloned (issue 28, item 1).
    text = ("version: 1\nname: lab\ndefaults:\n  jump: nope\n" + VCENTER)
    assert lab_issues(tmp_path, text) == [
        "lab.yaml:4:9: defaults.jump: jump host 'nope' is not in jump_hosts (none)"]
    (tmp_path / "lab.yaml").write_text(text)
    code, err = run_cli("validate", str(QUICKSTART), "--lab", str(tmp_path / "lab.yaml"))
    assert code == EXIT_CONFIG
    assert f"{tmp_path / 'lab.yaml'}:4:9: defaults.jump: jump host 'nope'" in err
