"""A tiled scenario's groups hold their count × the tile count guests at its largest
point: a find-max over 1 to 1000 tiles of a 10,000-guest group made 'vbench plan'
build 10^7 guest names (over 47 s of CPU and 1.7 GB before it was stopped). Validate
refuses a group that would hold more than a group may (10,000 guests) at the group."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.errors import ConfigValidationError

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "consolidation-tiles.yaml"


@pytest.mark.parametrize("sets", [
    ["search.max=1000", "topology.web.count=10000"],
    ["tiles.count=2", "topology.oltp.count=5001", "search=null"],
])
def test_a_group_times_the_most_tiles_above_a_groups_bound_is_refused(sets: list[str]) -> None:
    with pytest.raises(ConfigValidationError) as caught:
        load_scenario(SCENARIO, sets)
    said = [str(i) for i in caught.value.issues]
    assert any("topology." in s and "tiles" in s and "10,000" in s for s in said), said


def test_a_group_within_the_bound_at_the_most_tiles_is_taken() -> None:
    loaded = load_scenario(SCENARIO, ["search.max=1000", "topology.web.count=10"])
    assert loaded.model.topology["web"].count == 10
