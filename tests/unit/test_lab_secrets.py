"""Lab files: secrets only by reference, resolved late; nodes resolved with defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_lab
from vbench.config.secrets import expand_path, resolve_secret
from vbench.errors import ConfigError, ConfigValidationError

LAB = """\
version: 1
name: lab
defaults:
  port: 2200
  user: perf
  key_file: ${vbench:lab/id}
nodes:
  g1:
    address: 10.0.0.1
    password: PASSWORD
"""


def test_literal_password_is_refused_with_how_to_reference(tmp_path: Path) -> None:
    p = tmp_path / "lab.yaml"
    p.write_text(LAB.replace("PASSWORD", "hunter2"))
    with pytest.raises(ConfigValidationError) as exc:
        load_lab(p)
    (msg,) = [str(i) for i in exc.value.issues]
    assert msg.startswith(f"{p}:10:15: nodes.g1.password: a literal secret is not allowed")
    assert "${env:NAME}" in msg and "${file:/path/to/file}" in msg
    assert "hunter2" not in msg


def test_env_reference_resolves_late(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vbench.guest.labspec import guest_spec

    p = tmp_path / "lab.yaml"
    p.write_text(LAB.replace("PASSWORD", "${env:G1_PASS}"))
    lab = load_lab(p).model
    assert lab.nodes["g1"].password == "${env:G1_PASS}"  # the model keeps the reference
    monkeypatch.setenv("G1_PASS", "s3cret")
    monkeypatch.setenv("VBENCH_HOME", str(tmp_path / "home"))
    spec = guest_spec(lab, "g1")
    assert spec.password == "s3cret" and spec.port == 2200 and spec.user == "perf"
    assert spec.key_file == str(tmp_path / "home" / "lab" / "id")


def test_missing_env_secret_names_field_and_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_NOT_SET", raising=False)
    with pytest.raises(ConfigError) as exc:
        resolve_secret("${env:NOPE_NOT_SET}", "nodes.g1.password")
    assert str(exc.value) == "nodes.g1.password: environment variable NOPE_NOT_SET is not set"


def test_file_secret_strips_the_final_newline(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text("pa ss\n")
    assert resolve_secret(f"${{file:{f}}}", "x") == "pa ss"
    with pytest.raises(ConfigError, match="cannot read secret file"):
        resolve_secret(f"${{file:{tmp_path / 'missing'}}}", "x")


def test_expand_path_home_and_vbench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VBENCH_HOME", str(tmp_path))
    assert expand_path("${vbench:lab/k}") == str(tmp_path / "lab" / "k")
    assert not expand_path("~/x").startswith("~")


def test_local_lab_addresses_must_be_loopback(tmp_path: Path) -> None:
    p = tmp_path / "lab.yaml"
    p.write_text("version: 1\nname: l\nlocal: {addresses: [10.1.1.1], port: 2222}\n")
    with pytest.raises(ConfigValidationError, match="is not a loopback address"):
        load_lab(p)


def test_example_local_lab_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    lab = load_lab(root / "examples" / "labs" / "local.yaml").model
    assert lab.local is not None and len(lab.local.addresses) == len(lab.nodes)
