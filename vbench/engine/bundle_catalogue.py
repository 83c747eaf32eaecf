"""The metrics a bundle stores (vbench/engine/bundle.py): each member driver's catalogue
under the workload's name (``web.ops_per_sec``), per tile when the bundle is tiled, with
the bundle's own ``<name>.ok`` and ``start_spread``."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from vbench.analysis.catalogue import Metric
from vbench.config.tiles import OK_METRIC, SPREAD_METRIC, TILE_LABEL

if TYPE_CHECKING:
    from vbench.engine.bundle import BundleParams


def bundle_catalogue(params: BundleParams) -> tuple[Metric, ...] | None:
    """None when a member's driver declares no catalogue (names cannot be checked)."""
    tiles = sorted({str(m.instance.tile) for m in params.members if m.instance.tile})
    out: list[Metric] = []
    for m in params.first_of_each():
        declared = m.driver.metric_catalogue(m.params)
        if declared is None:
            return None
        name = m.instance.workload
        own = [replace(d, pattern=f"{name}.{d.pattern}") for d in declared]
        own.append(Metric(f"{name}.{OK_METRIC}", "", "none"))
        out.extend(_per_tile(own, tiles))
    out.extend(_per_tile([Metric(SPREAD_METRIC, "s", "lower")], tiles))
    return tuple(out)


def _per_tile(entries: list[Metric], tiles: list[str]) -> list[Metric]:
    if not tiles:
        return entries
    # Each figure per tile, and its mean over the tiles unlabelled (engine/bundle.py).
    return [replace(e, labels=(*e.labels, (TILE_LABEL, tuple(tiles)))) for e in entries]
