"""Install a test plugin distribution the way a lab would: a wheel, installed by pip.

The test plugins live as source folders under ``tests/dists/<name>/`` (a package and an
``entry_points.txt``). There is no build backend offline, so the wheel is assembled here
(it is a zip with a ``.dist-info``: METADATA, WHEEL, entry_points.txt, RECORD) and pip
installs it with ``--no-deps --target DIR``; a `vbench` process with ``DIR`` on its
PYTHONPATH finds the driver through its ``vbench.workloads`` entry point.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

DISTS = Path(__file__).resolve().parent.parent / "dists"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(dist: str, out_dir: Path, version: str = "0.1") -> Path:
    src = DISTS / dist
    project = f"vbench_{dist}"
    info = f"{project}-{version}.dist-info"
    files: dict[str, bytes] = {}
    for path in sorted((src / project).rglob("*.py")):
        files[str(path.relative_to(src))] = path.read_bytes()
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n"
    ).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: vbench-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/entry_points.txt"] = (src / "entry_points.txt").read_bytes()
    record = [_record_line(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = out_dir / f"{project}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel


def install_dist(dist: str, target: Path) -> Path:
    """pip install the test distribution ``dist`` into ``target``; returns ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(dist, target.parent)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(target), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, f"pip install {wheel.name} failed:\n{res.stdout}{res.stderr}"
    return target
