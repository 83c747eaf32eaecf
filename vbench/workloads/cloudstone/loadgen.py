"""Locust in the client guests: the wheelhouse built on the controller, the private venv
in each client guest, and the Locust processes of one instance (standalone, or a master
and one worker per client guest).

Lab guests often have no internet: the wheels are downloaded once on the controller
(``pip download`` for the guest's Python version and machine) into a cache folder,
pushed to the guest, and installed with ``pip --no-index`` into a venv inside the run's
scratch directory (removed with it). A Locust already in the guest can be used instead
(``locust_command``).
"""

from __future__ import annotations

import os
import posixpath
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vbench.config.secrets import expand_path
from vbench.errors import GuestError, LabError
from vbench.resources import driver_file
from vbench.templates import render_json
from vbench.workloads.cloudstone.params import integer_weights

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.workloads.cloudstone.params import CloudstoneParams

_PLATFORMS = ("manylinux2014", "manylinux_2_28", "manylinux_2_17", "manylinux1",
              "manylinux_2_5", "manylinux_2_24", "manylinux_2_26", "manylinux_2_12",
              "manylinux2010")  # fmt: skip
_PROBE = "import sys, platform; print('%d.%d' % sys.version_info[:2], platform.machine())"


def wheelhouse_dir(p: CloudstoneParams, python: str, machine: str) -> Path:
    root = os.environ.get("VBENCH_WHEELHOUSE") or expand_path(p.wheelhouse)
    return Path(root) / f"locust-{p.locust_version}-py{python}-{machine}"


def build_wheelhouse(dest: Path, version: str, python: str, machine: str) -> Path:
    """Download Locust and its dependencies as wheels for (python, machine), once."""
    if any(dest.glob(f"locust-{version}-*.whl")):
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
            "--python-version", python, "--dest", str(dest)]  # fmt: skip
    for plat in _PLATFORMS:
        argv += ["--platform", f"{plat}_{machine}"]
    res = subprocess.run([*argv, f"locust=={version}"], capture_output=True, text=True,
                         timeout=1800, check=False)  # fmt: skip
    if res.returncode != 0:
        said = (res.stderr or res.stdout).strip().splitlines()
        raise LabError("controller", f"cannot build the Locust {version} wheelhouse in "
                       f"{dest} ({said[-1] if said else res.returncode})")  # fmt: skip
    return dest


def ensure_locust(guest: Guest, p: CloudstoneParams, base: str) -> str:
    """The locust command to run in ``guest``: the user's, or a venv installed from wheels."""
    if p.locust_command:
        if guest.run([p.locust_command, "--version"], check=False, timeout=60).status != 0:
            raise GuestError(guest.name, f"locust_command {p.locust_command} does not run")
        return p.locust_command
    venv = posixpath.join(base, "locust-venv")
    exe = f"{venv}/bin/locust"
    if guest.run(["test", "-x", exe], check=False, timeout=30).status == 0:
        return exe
    probe = guest.run(["python3", "-c", _PROBE], check=False, timeout=60)
    if probe.status != 0:
        raise GuestError(guest.name, "python3 is needed to run Locust and does not run")
    python, machine = probe.stdout.split()
    wheels = build_wheelhouse(wheelhouse_dir(p, python, machine), p.locust_version,
                              python, machine)  # fmt: skip
    remote = posixpath.join(base, "locust-wheels")
    guest.put(wheels, remote)
    q = shlex.quote
    res = guest.run_script(
        f"python3 -m venv {q(venv)} && {q(venv + '/bin/pip')} install --quiet --no-index "
        f"--find-links {q(remote)} {q('locust==' + p.locust_version)}",
        check=False, timeout=900,
    )
    if res.status != 0:
        said = (res.stderr or res.stdout).strip().splitlines()
        raise GuestError(guest.name, f"cannot install Locust from the wheelhouse: "
                         f"{said[-1] if said else res.status}")  # fmt: skip
    guest.remove(remote)
    return exe


@dataclass
class LoadGen:
    """The Locust processes of one instance."""

    instance: int
    dir: str  # on every client guest of the instance
    guests: list[Guest]
    procs: list[RemoteProcess] = field(default_factory=list)

    def records_glob(self) -> str:
        return f"{self.dir}/records.*"

    def stop(self) -> None:
        # TERM: Locust quits cleanly and flushes its records file.
        for proc in self.procs:
            proc.kill(grace=15)


def config(p: CloudstoneParams, url: str, records: str, ramp_up: float, steady: float,
           ramp_down: float, counts: dict[str, int]) -> dict[str, object]:  # fmt: skip
    """The JSON the locustfile reads (see drivers/cloudstone/locustfile.py)."""
    rate = p.rate if p.profile == "rate" else None
    users = max(1, round(rate)) if rate is not None else p.users
    return {
        "profile": p.profile, "host": url, "operations": p.operations(),
        "matrix": integer_weights(p.effective_matrix()),
        "think": {"kind": p.think.kind, "mean": p.think.mean, "max": p.think_max(),
                  "seconds": p.think.seconds},
        "users": users, "rate": rate, "static_path": p.static_path,
        "ramp_up": ramp_up, "steady": steady, "ramp_down": ramp_down,
        "fetch_images": p.fetch_images, "records": records, **counts,
    }  # fmt: skip


def start(gen: LoadGen, commands: list[str], cfg: dict[str, object], port: int,
          lifetime: float) -> None:  # fmt: skip
    """Standalone Locust with one client guest, else a master on the first and a worker
    on each; every process gets the same locustfile and configuration."""
    text = render_json(cfg)
    for g in dict.fromkeys(gen.guests):
        g.put(driver_file("cloudstone", "locustfile.py"), f"{gen.dir}/locustfile.py")
        g.put_text(text, f"{gen.dir}/locust.json")
    env = {"VBENCH_CS_CONFIG": f"{gen.dir}/locust.json", "PYTHONUNBUFFERED": "1"}
    life = ["timeout", "--foreground", "-k", "15", f"{int(lifetime)}"]
    common = ["-f", f"{gen.dir}/locustfile.py", "--loglevel", "WARNING"]
    if len(gen.guests) == 1:
        gen.procs.append(gen.guests[0].start(
            [*life, commands[0], *common, "--headless", "--only-summary"],
            log=f"{gen.dir}/locust.log", cwd=gen.dir, env=env))  # fmt: skip
        return
    master = gen.guests[0]
    gen.procs.append(master.start(
        [*life, commands[0], *common, "--headless", "--only-summary", "--master",
         "--master-bind-host", master.spec.address, "--master-bind-port", str(port),
         "--expect-workers", str(len(gen.guests))],
        log=f"{gen.dir}/locust-master.log", cwd=gen.dir, env=env))  # fmt: skip
    for j, g in enumerate(gen.guests):
        gen.procs.append(g.start(
            [*life, commands[j], *common, "--worker", "--master-host", master.spec.address,
             "--master-port", str(port)],
            log=f"{gen.dir}/locust-worker{j}.log", cwd=gen.dir, env=env))  # fmt: skip


def main(argv: list[str]) -> int:
    """``python -m vbench.workloads.cloudstone.loadgen DIR [VERSION]``: fill the wheelhouse
    for the ``python3`` on this machine's PATH (what the local lab's guests run); used by
    ``make wheelhouse``."""
    import shutil

    from vbench.workloads.cloudstone.params import CloudstoneParams

    version = argv[1] if len(argv) > 1 else CloudstoneParams().locust_version
    python3 = shutil.which("python3") or sys.executable
    out = subprocess.run([python3, "-c", _PROBE], capture_output=True, text=True, check=True)
    python, machine = out.stdout.split()
    dest = Path(argv[0]) / f"locust-{version}-py{python}-{machine}"
    print(build_wheelhouse(dest, version, python, machine))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
