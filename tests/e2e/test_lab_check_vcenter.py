"""`vbench lab check` against a real vCenter simulator: a warning of a vCenter whose
label holds a colon (its host:port) names that vCenter whole (issue 28, item 11)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.e2e.helpers import vbench
from tests.vcsim import VcsimServer


def test_the_insecure_warning_names_the_whole_vcenter(
    vcsim: VcsimServer, vc_password: str, tmp_path: Path
) -> None:
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({
        "version": 1, "name": "sim",
        "vcenters": {"sim": vcsim.lab_vcenter(insecure=True)},
    }))
    res = vbench("lab", "check", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    label = f"vcenter sim ({vcsim.host}:{vcsim.port})"
    assert (f"warn  {label}  warning: TLS certificate verification is off (insecure: true); "
            "pin the certificate with `thumbprint:` instead") in res.stdout.splitlines()
    assert res.stdout.splitlines()[-1] == "1 passed, 1 warnings, 0 failed"
