"""`validate` warns, located at the collector's interval, when an esxtop interval is too
long for the shortest steady window to hold a whole sample: the busy-VM watch could not
read that trial (it would only say 'not watched' after it). Twice the interval holds one;
`disturbance: {watch: false}` asks for no watch, and gets no warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan


def _warnings(tmp_path: Path, steady: str, **extra: Any) -> list[str]:
    doc = {"version": 1, "name": "w", "topology": {"storage": {"nodes": ["guest1"]}},
           "workload": {"driver": "fio", "params": {"rw": "randread", "size": "4m"}},
           "repeat": 1, "phases": {"warmup": "0s", "steady": steady},
           "collectors": [{"kind": "guest_sysstat", "interval": "1s"},
                          {"kind": "esxtop", "interval": "5s"}], **extra}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return [f"{f.at}: {f.path}: {f.message}" for f in build_plan(load_scenario(path)).findings
            if "esxtop every" in f.message]


def test_a_steady_window_shorter_than_two_esxtop_intervals_is_warned(tmp_path: Path) -> None:
    (warning,) = _warnings(tmp_path, "9s")
    assert warning.startswith(f"{tmp_path / 's.yaml'}:") and ": collectors.1.interval: " in warning
    assert "esxtop every 5 s: the shortest steady window (9 s) may hold no whole sample" in warning
    assert "a steady window of 10 s or more holds one" in warning


def test_two_intervals_or_no_watch_is_not_warned(tmp_path: Path) -> None:
    assert _warnings(tmp_path, "10s") == []
    assert _warnings(tmp_path, "4s", disturbance={"watch": False}) == []
