"""A scenario whose every point repeats the same invalid parameters says each problem
once, located, however many points it has. (The de-duplication was a search of the
list: a thousand points of a thousand problems took 11 s of CPU in `plan`; the lab and
scenario fuzz test's CPU limit is what catches that, not this test, which holds what
the faster de-duplication must still do.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError


def test_each_problem_of_many_points_is_said_once(tmp_path: Path) -> None:
    doc = {
        "version": 1, "name": "many",
        "topology": {"storage": {"nodes": ["guest1"]}},
        "workload": {"driver": "fio", "params": {"rw": "randread", "size": "4m",
                                                 **{f"bogus{i}": 1 for i in range(40)}}},
        "factors": {"iodepth": list(range(1, 201))}, "repeat": 1,
        "phases": {"warmup": "0s", "steady": "1s"},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ConfigValidationError) as err:
        build_plan(load_scenario(path))
    texts = [str(i) for i in err.value.issues]
    bogus = [t for t in texts if "bogus" in t]
    assert len(bogus) == 40 and len(set(texts)) == len(texts), texts[:5]
    assert all(t.startswith(f"{path}:") for t in bogus)
