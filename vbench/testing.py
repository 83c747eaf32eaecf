"""A plugin author's kit: pytest fixtures and helpers to test a vbench driver (collector,
parser) the way vbench's own tests do — against real peers, waiting for events.

It is a pytest plugin: installing vbench registers it (entry point ``pytest11`` named
``vbench.testing``), so the fixtures below are there in any project's tests (``-p vbench.testing``
loads it when plugin autoloading is off). Nothing runs until a test asks for a fixture,
and none is autouse. vbench's own suite uses these helpers too (tests/conftest.py,
tests/vcsim.py, tests/e2e/helpers.py). The CLI never imports this module.

Fixtures:

- ``vbench_home``: a fresh ``VBENCH_HOME`` (results, store, logs) for the test.
- ``vbench_sshd`` / ``vbench_guests`` (session): two guests, ``guest1`` on 127.0.0.2 and
  ``guest2`` on 127.0.0.3, served by one real OpenSSH server started through vbench's
  local-lab code (its own host and user keys, pre-filled known_hosts).
- ``vbench_lab``: ``vbench_lab(roles=("storage",))`` writes a lab file for those guests
  (with a scratch ``workdir`` of the test's own) and returns its path.
- ``vbench_cli``: runs ``vbench`` as a real process with the test's home:
  ``vbench_cli("run", scenario, "--lab", lab)``, ``.popen(...)`` for signals,
  ``.show(run_id)``, ``.wait_for_event(event, proc=..., **fields)``.
- ``vbench_vcsim``: ``vbench_vcsim(**VcsimOptions)`` starts a vCenter simulator (govmomi's
  vcsim: ``$VBENCH_VCSIM``, vbench's ``.tools/bin`` or PATH), stopped after the test;
  its lab entry is ``server.lab_vcenter()``.

An sshd that is not installed skips the test, or fails it when ``VBENCH_REQUIRE_PEERS=1``
(CI: a skipped test must never pass for coverage); a vcsim that cannot start fails it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:
    # vbench's own modules are imported when a fixture runs: pytest loads this plugin in
    # every test run of an environment with vbench installed, and must stay quick there.
    from vbench.guest.ssh import GuestSpec
    from vbench.vsphere.simulator import VcsimProcess

GUEST_ADDRESSES = ("127.0.0.2", "127.0.0.3")
VCSIM_USER = "vbench-test"
VCSIM_PASSWORD = "vcsim-Pw-91c4"
VCSIM_PASSWORD_ENV = "VBENCH_TEST_VC_PASSWORD"  # what lab files of ``lab_vcenter`` name
POLL_S = 0.1  # how often a wait looks at its event


def missing_peer(reason: str) -> None:
    """A real peer (sshd, vcsim, the tool a driver runs …) is not installed: skip, or
    fail under ``VBENCH_REQUIRE_PEERS=1``, where a skipped test must not pass."""
    if os.environ.get("VBENCH_REQUIRE_PEERS"):
        pytest.fail(f"{reason} — required under VBENCH_REQUIRE_PEERS")
    pytest.skip(reason)


def free_port(*addresses: str) -> int:
    """A TCP port free on every given address (default 127.0.0.1) at the time of asking."""
    addrs = addresses or ("127.0.0.1",)
    for _ in range(50):
        with socket.socket() as first:
            first.bind((addrs[0], 0))
            port = first.getsockname()[1]
            if all(_bindable(a, port) for a in addrs[1:]):
                return port
    raise RuntimeError(f"no common free port on {addrs}")


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


# --------------------------------------------------------------- loopback guests


@dataclass(frozen=True)
class LocalSshd:
    """The loopback guests' sshd: where it listens and what a client needs to log in."""

    home: Path  # vbench home holding lab/ (keys, config, log)
    port: int
    addresses: tuple[str, ...]
    key_file: Path
    known_hosts: Path
    pid: int
    workdir: Path  # a scratch folder the guests' specs use as workdir
    specs: tuple[GuestSpec, ...]

    @property
    def log(self) -> Path:
        return self.home / "lab" / "sshd.log"


class LocalGuests(list["GuestSpec"]):
    """The guest specs (guest1, guest2 …), with ``.sshd`` describing their server."""

    sshd: LocalSshd


def have_sshd() -> bool:
    from vbench.guest.locallab import SSHD_CANDIDATES

    return any(Path(p).exists() for p in SSHD_CANDIDATES) or shutil.which("sshd") is not None


@contextlib.contextmanager
def start_local_sshd(home: Path, workdir: Path,
               addresses: Sequence[str] = GUEST_ADDRESSES) -> Iterator[LocalSshd]:
    """One sshd listening on every loopback ``address`` (each a guest), stopped after."""
    from vbench.guest.locallab import (
        lab_down,
        lab_guest_specs,
        lab_up,
        local_key_file,
        local_known_hosts,
    )

    if not have_sshd():
        missing_peer("OpenSSH server (sshd) is not installed")
    port = free_port(*addresses)
    status = lab_up(tuple(addresses), port, home=home)
    assert status.pid is not None
    specs = lab_guest_specs(tuple(addresses), port, home=home, workdir=str(workdir))
    try:
        yield LocalSshd(home=home, port=port, addresses=tuple(addresses),
                        key_file=local_key_file(home), known_hosts=local_known_hosts(home),
                        pid=status.pid, workdir=workdir, specs=tuple(specs))
    finally:
        lab_down(home=home)


def guests_of(sshd: LocalSshd) -> LocalGuests:
    guests = LocalGuests(sshd.specs)
    guests.sshd = sshd
    return guests


def guest_workdir(lab: Path) -> Path:
    """The guests' scratch root of the lab written at ``lab``: one per test, so that
    process patterns and leftovers are this test's own, whatever else runs."""
    return lab.parent / "guest-work"


def write_lab(path: Path, guests: LocalGuests, extra_nodes: dict[str, dict] | None = None,
              roles: Sequence[str] = ("storage",)) -> Path:
    """A lab file at ``path`` whose nodes are ``guests`` (each with ``roles``)."""
    sshd = guests.sshd
    nodes = {g.name: {"address": g.address, "roles": list(roles)} for g in guests}
    nodes.update(extra_nodes or {})
    lab = {
        "version": 1,
        "name": "e2e",
        "defaults": {
            "port": sshd.port,
            "key_file": str(sshd.key_file),
            "known_hosts": str(sshd.known_hosts),
            "workdir": str(guest_workdir(path)),
        },
        "nodes": nodes,
    }
    path.write_text(yaml.safe_dump(lab, sort_keys=False))
    return path


# --------------------------------------------------------------- waiting for events


def wait_for(predicate: Callable[[], object], timeout: float = 30.0,
             what: str = "condition") -> None:
    """Until ``predicate()`` is true (the event itself, never a guessed duration)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(POLL_S)
    raise AssertionError(f"timed out waiting for {what}")


def log_events(home: Path) -> list[dict]:
    """Every complete line of every run log under ``home`` (a test's VBENCH_HOME)."""
    records: list[dict] = []
    for log in sorted((home / "results").glob("*/log.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(json.JSONDecodeError):  # a line still being written
                records.append(json.loads(line))
    return records


def logged(home: Path, event: str, **fields: object) -> Callable[[], bool]:
    """A predicate: a run under ``home`` has logged ``event`` with these field values
    (e.g. ``logged(home, "phase_mark", mark="steady_start", point=0, trial=1)``)."""

    def seen() -> bool:
        return any(r.get("event") == event and all(r.get(k) == v for k, v in fields.items())
                   for r in log_events(home))

    return seen


def wait_for_log(home: Path, event: str, timeout: float = 60.0,
                 proc: subprocess.Popen | None = None, **fields: object) -> None:
    """Wait until a run under ``home`` logs ``event`` (with ``fields``). If ``proc`` (the
    run) ends first, fail at once with its output."""
    seen = logged(home, event, **fields)

    def seen_or_ended() -> bool:
        if seen():
            return True
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(
                f"run ended (rc={proc.returncode}) before {event} {fields}:\n{out}{err}")
        return False

    wait_for(seen_or_ended, timeout, f"{event} {fields} in the run log")


def local_processes(pattern: str) -> list[str]:
    """Processes of this machine matching ``pattern`` (``pgrep -af``): the loopback
    guests' processes are this machine's, so a test sees what a run left running."""
    res = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True)
    return [ln for ln in res.stdout.splitlines() if "pgrep" not in ln]


# --------------------------------------------------------------- the CLI


def vbench_process(*args: str, timeout: float = 180,
                   env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would: a real process (signals and exit codes are real)."""
    return subprocess.run([sys.executable, "-m", "vbench", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def vbench_popen(*args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "vbench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def run_id_of(output: str) -> str:
    """The run id of `vbench run`'s last line (``run ID: status (dir)``)."""
    m = re.search(r"^run (\S+): ", output, re.M)
    assert m, f"no run id in output:\n{output}"
    return m.group(1)


@dataclass(frozen=True)
class Cli:
    """`vbench` as a process, with the test's ``VBENCH_HOME``."""

    home: Path

    def __call__(self, *args: str, timeout: float = 180,
                 env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return vbench_process(*args, timeout=timeout, env=self._env(env))

    def popen(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        return vbench_popen(*args, env=self._env(env))

    def show(self, run_id: str) -> dict[str, Any]:
        """`vbench show RUN --json`: the stored run, its points, trials and summary."""
        res = self("show", run_id, "--json")
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    def events(self, event: str | None = None, **fields: object) -> list[dict]:
        return [r for r in log_events(self.home) if event in (None, r.get("event"))
                and all(r.get(k) == v for k, v in fields.items())]

    def wait_for_event(self, event: str, timeout: float = 60.0,
                       proc: subprocess.Popen | None = None, **fields: object) -> None:
        wait_for_log(self.home, event, timeout, proc, **fields)

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        # Empty is unset: the run's store and results are the test's home, never the
        # store a developer's shell points at.
        own = {"VBENCH_HOME": str(self.home), "VBENCH_STORE": "", "VBENCH_RESULTS": ""}
        return {**own, **(env or {})}


# --------------------------------------------------------------- vcsim


@dataclass
class VcsimServer:
    process: VcsimProcess
    user: str
    password: str

    @property
    def host(self) -> str:
        return self.process.address

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def url(self) -> str:
        return self.process.url

    def certificate_pem(self) -> str:
        return ssl.get_server_certificate((self.host, self.port))

    def lab_vcenter(self, **extra: Any) -> dict[str, Any]:
        """A lab file's `vcenters.<name>` entry for this simulator (password from env)."""
        return {"url": self.url, "user": self.user,
                "password": "${env:" + VCSIM_PASSWORD_ENV + "}", **extra}

    def stop(self) -> None:
        self.process.stop()


def start_vcsim_server(log_dir: Path, **options: Any) -> VcsimServer:
    """A vcsim with the kit's user and password (``options``: the fields of
    vbench.vsphere.simulator.VcsimOptions)."""
    from vbench.errors import LabError
    from vbench.vsphere.simulator import VcsimOptions, start_vcsim

    opts = VcsimOptions(**{"username": VCSIM_USER, "password": VCSIM_PASSWORD, **options})
    try:
        proc = start_vcsim(opts, log_dir / "vcsim.log")
    except LabError as exc:
        pytest.fail(f"cannot start vcsim (vbench's `make tools`, or $VBENCH_VCSIM): {exc}",
                    pytrace=False)
    return VcsimServer(proc, opts.username or "", opts.password or "")


@contextlib.contextmanager
def vcsim_servers(folder: Path) -> Iterator[Callable[..., VcsimServer]]:
    """A factory of simulators (``factory(**VcsimOptions fields)``), each logging in a
    folder of its own under ``folder``; every one is stopped at the end."""
    started: list[VcsimServer] = []

    def factory(**options: Any) -> VcsimServer:
        server = start_vcsim_server(folder / f"vcsim-{len(started)}", **options)
        started.append(server)
        return server

    try:
        yield factory
    finally:
        for s in started:
            s.stop()


# --------------------------------------------------------------- the fixtures


@pytest.fixture
def vbench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh VBENCH_HOME for this test: nothing touches the user's own results."""
    home = tmp_path / "vbench-home"
    monkeypatch.setenv("VBENCH_HOME", str(home))
    for own_store in ("VBENCH_STORE", "VBENCH_RESULTS"):  # a developer's, from the shell
        monkeypatch.delenv(own_store, raising=False)
    return home


@pytest.fixture(scope="session")
def vbench_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSshd]:
    with start_local_sshd(tmp_path_factory.mktemp("sshd-home"),
                    tmp_path_factory.mktemp("guest-workdir")) as sshd:
        yield sshd


@pytest.fixture(scope="session")
def vbench_guests(vbench_sshd: LocalSshd) -> LocalGuests:
    """[guest1 (127.0.0.2), guest2 (127.0.0.3)] with key_file and known_hosts set."""
    return guests_of(vbench_sshd)


@pytest.fixture
def vbench_lab(vbench_guests: LocalGuests, tmp_path: Path) -> Callable[..., Path]:
    """``vbench_lab(roles=("storage",), extra_nodes=None)``: a lab file of the guests."""

    def make(roles: Sequence[str] = ("storage",),
             extra_nodes: dict[str, dict] | None = None) -> Path:
        return write_lab(tmp_path / "lab.yaml", vbench_guests, extra_nodes, roles)

    return make


@pytest.fixture
def vbench_cli(vbench_home: Path) -> Cli:
    return Cli(vbench_home)


@pytest.fixture
def vbench_vcsim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                 ) -> Iterator[Callable[..., VcsimServer]]:
    monkeypatch.setenv(VCSIM_PASSWORD_ENV, VCSIM_PASSWORD)
    with vcsim_servers(tmp_path) as factory:
        yield factory


# --------------------------------------------------------------- a driver's docs

_PARAM_HEADS = {"parameter", "parameters", "param", "name", "field"}


def driver_doc_pages(driver: type) -> list[Path]:
    """The pages a driver declares in ``docs``: in vbench's checkout for a built-in, in
    the top-level package of the distribution a lab's driver ships in."""
    import importlib

    top = driver.__module__.split(".", 1)[0]
    package = importlib.import_module(top)
    root = Path(package.__file__ or ".").resolve().parent
    if top == "vbench":
        root = root.parent  # docs/ and drivers/ sit beside the package in a checkout
    return [root / page for page in getattr(driver, "docs", ())]


def mentioned(field: str, text: str) -> bool:
    """Named as `field`, as a YAML key (``field:``, also commented out) or inside a
    backticked option list such as `netperf`/`netserver`."""
    f = re.escape(field)
    return bool(re.search(rf"`{f}`|(?<![\w.-]){f}:|`[^`\n]*\b{f}\b[^`\n]*`", text))


def table_names(text: str) -> set[str]:
    """Backticked names in the first column of tables headed parameter/name."""
    names: set[str] = set()
    for block in re.findall(r"((?:^\|.*\n)+)", text, re.M):
        lines = block.strip().splitlines()
        head = lines[0].strip().strip("|").split("|")[0].strip().lower()
        if head in _PARAM_HEADS:
            for line in lines[2:]:
                names |= set(re.findall(r"`([\w.]+)`", line.strip().strip("|").split("|")[0]))
    return names


def yaml_params(driver: str, text: str) -> list[dict]:
    """The ``workload.params`` of every YAML example in ``text`` that uses ``driver``."""
    out = []
    for m in re.finditer(r"```yaml\n(.*?)```", text, re.S):
        doc = yaml.safe_load(m.group(1))
        work = doc.get("workload") if isinstance(doc, dict) else None
        if isinstance(work, dict) and work.get("driver") == driver and work.get("params"):
            out.append(work["params"])
    return out


def driver_doc_problems(driver: type) -> list[str]:
    """What a driver's declared pages get wrong about its ``Params``: none declared or a
    page missing, a parameter never named, a parameter table naming no parameter, a YAML
    example whose params the model refuses. Empty: the docs are honest."""
    from pydantic import ValidationError

    name, model = driver.name, driver.Params  # type: ignore[attr-defined]
    pages = driver_doc_pages(driver)
    missing = [str(p) for p in pages if not p.is_file()]
    if not pages or missing:
        return [f"{name}: declares no doc page (docs = (...))" if not pages
                else f"{name}: declared doc pages missing: {missing}"]
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    fields = set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}
    out = []
    unnamed = sorted(f for f in model.model_fields if not mentioned(f, text))
    if unnamed:
        out.append(f"{name}: parameters its docs never name: {unnamed}")
    unknown = sorted(table_names(text) - fields)
    if unknown:
        out.append(f"{name}: its docs' parameter tables name no such parameter: {unknown}")
    for params in yaml_params(name, text):
        try:
            model.model_validate(params)
        except ValidationError as exc:
            out.append(f"{name}: a YAML example's params are refused: {exc}")
    return out
