"""A shared lab's queue with real `vbench run` processes: while one run holds its lab,
a second is refused with one line naming the holder, `vbench lab who` shows it, a run
with --wait queues behind it, and kill -9 of the holder lets the queued run through —
on an SQLite store (a file lock beside it) and on PostgreSQL (an advisory lock)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    vbench,
    vbench_popen,
    wait_for,
    wait_for_log,
    write_lab,
    write_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, vbench_home: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{vbench_home / 'results' / 'vbench.db'}"
    return str(request.getfixturevalue("fresh_postgresql_url"))


def test_a_second_run_on_a_held_lab_is_refused_or_queued_until_the_holder_dies(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path, store: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    # The holder measures for a minute: it is killed long before that.
    s = write_scenario(tmp_path / "s.yaml", groups=1, warmup="0s", steady="60s", repeat=1,
                       factors="  bs: [4k]\n")
    store_args = ("--store", store)
    holder = vbench_popen("run", str(s), "--lab", str(lab), *store_args)
    impatient: subprocess.Popen[str] | None = None
    queued: subprocess.Popen[str] | None = None
    try:
        wait_for_log(vbench_home, "phase_mark", 120, holder, mark="steady_start")
        run_id = _run_id_of_log(vbench_home)

        refused = vbench("run", str(s), "--lab", str(lab), *store_args, timeout=120)
        assert refused.returncode == 3, refused.stdout + refused.stderr
        line = refused.stderr.strip()
        assert "\n" not in line, line
        assert line.startswith(f"error: lab e2e: in use by run {run_id} (pid {holder.pid} "
                               f"on host {socket.gethostname()}, since "), line

        who = vbench("lab", "who", str(lab), *store_args)
        assert who.returncode == 0, who.stderr
        assert f"held by run {run_id} (pid {holder.pid} " in who.stdout
        assert "scenario e2e-fio" in who.stdout
        [held] = json.loads(vbench("lab", "who", "--json", *store_args).stdout)  # every lab
        assert (held["run_id"], held["pid"], held["lab"]) == (run_id, holder.pid, "e2e")

        waiting = f"waiting for lab e2e: in use by run {run_id} (pid {holder.pid} "
        # Ctrl-C while queued: exit 130, nothing run.
        impatient_err = tmp_path / "impatient.err"
        impatient = _popen(impatient_err, "run", str(s), "--lab", str(lab), *store_args,
                           "--wait")
        wait_for(lambda: waiting in impatient_err.read_text() or impatient.poll() is not None,
                 120, "the impatient run to queue")
        impatient.send_signal(signal.SIGINT)
        impatient.communicate(timeout=60)
        assert impatient.returncode == 130, impatient_err.read_text()
        assert impatient_err.read_text().rstrip().endswith("interrupted")

        err_file = tmp_path / "queued.err"
        queued = _popen(err_file, "run", str(s), "--lab", str(lab), *store_args, "--wait",
                        "--set", "phases.steady=1s")
        wait_for(lambda: waiting in err_file.read_text() or queued.poll() is not None, 120,
                 "the queued run to say whom it waits for")
        assert queued.poll() is None, err_file.read_text()

        holder.send_signal(signal.SIGKILL)
        holder.wait(60)
        out, _ = queued.communicate(timeout=180)
        assert queued.returncode == 0, err_file.read_text()[-3000:]
        assert ": ok (" in out.strip().splitlines()[-1]
        assert "lab e2e is free after " in err_file.read_text()
        who = vbench("lab", "who", str(lab), *store_args)
        assert "lab e2e (" in who.stdout and "): free" in who.stdout
    finally:
        for proc in (holder, impatient, queued):
            if proc is not None and proc.poll() is None:  # a failed assertion's leftovers
                proc.kill()
                proc.wait(60)
        # What the killed holder left in the guest (its fio) is cleaned up as a user would.
        if holder.returncode is not None:
            vbench("cleanup", _run_id_of_log(vbench_home), "--lab", str(lab), *store_args,
                   timeout=120)


def _popen(err_file: Path, *args: str) -> subprocess.Popen[str]:
    """`vbench ARGS` as a process whose stderr goes to ``err_file`` (read while it runs)."""
    with err_file.open("w") as err:
        return subprocess.Popen([sys.executable, "-m", "vbench", *args],
                                stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ})


def _run_id_of_log(home: Path) -> str:
    """The first run's id (its results folder is named by it; ids sort by start time)."""
    return sorted(p.parent.name for p in (home / "results").glob("*/log.jsonl"))[0]


def test_an_aa_series_keeps_its_lab_until_its_last_run_ends(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    # Each A/A run gave the lease back as it ended: a run queued with --wait took the
    # lab between two of them, and the next A/A run was refused ('in use by run …').
    store = f"sqlite:///{vbench_home / 'results' / 'vbench.db'}"
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", groups=1, warmup="0s", steady="1s", repeat=1,
                       factors="  bs: [4k]\n")
    aa = _popen(tmp_path / "aa.err", "run", str(s), "--lab", str(lab), "--aa", "3",
                "--store", store)
    queued: subprocess.Popen[str] | None = None
    try:
        wait_for_log(vbench_home, "phase_mark", 120, aa, mark="steady_start")
        queued = _popen(tmp_path / "queued.err", "run", str(s), "--lab", str(lab), "--wait",
                        "--store", store)
        aa.communicate(timeout=300)
        assert aa.returncode == 0, (tmp_path / "aa.err").read_text()[-3000:]
        queued.communicate(timeout=180)
        assert queued.returncode == 0, (tmp_path / "queued.err").read_text()[-3000:]
    finally:
        for proc in (aa, queued):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(60)
    runs = json.loads(vbench("ls", "--json", "--store", store).stdout)
    by_start = sorted(runs, key=lambda r: r["started"])
    assert [("aa" in r["tags"]) for r in by_start] == [True, True, True, False], by_start
