"""Collector files in the run directory: the series Parquet files and their manifest.

Layout (documented in docs/metrics.md)::

    series/<point>-<trial>/<collector>/<target>.parquet   one file per collector × target
    series/<point>-<trial>/collectors.json                 what ran, failed, offsets, notes
    raw/<point>-<trial>/<target>/...                       raw captures (esxtop .csv.gz, sa)

Every Parquet file has the columns of :func:`series_schema`: ``time`` is controller time
(the target's clock offset removed), one row per sample and counter. Written by
``vbench/collectors``; read by ``vbench show`` and the report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")
    pa = lazy_module("pyarrow")
    pq = lazy_module("pyarrow.parquet")

SERIES_DIR = "series"
MANIFEST = "collectors.json"


@dataclass
class CollectorRecord:
    """One collector on one target in one trial: what the manifest keeps."""

    collector: str
    kind: str
    target: str
    required: bool
    interval: float
    status: str = "ok"  # ok | failed
    error: str | None = None
    file: str | None = None  # relative to the run directory
    rows: int = 0
    metrics: int = 0
    first: float | None = None  # controller time of the first and last sample
    last: float | None = None
    clock_offset: float | None = None
    clock_rtt: float | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def series_schema() -> pa.Schema:
    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema(
        [
            pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("metric", text),
            pa.field("value", pa.float64()),
            pa.field("unit", text),
            pa.field("source", text),
            pa.field("entity", text),
            pa.field("object", text),
            pa.field("instance", text),
            pa.field("counter", text),
            pa.field("point", pa.int32()),
            pa.field("trial", pa.int32()),
        ]
    )


def safe_name(name: str) -> str:
    """A file name for a target or collector name (entity names may hold slashes)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "target"


def write_series(
    path: Path,
    frame: pd.DataFrame,
    *,
    source: str,
    entity: str,
    point: int,
    trial: int,
    metadata: dict[str, Any],
) -> int:
    """Write one collector × target series; ``frame`` has controller ``time`` (epoch s)
    and a ``metric`` column. Returns the row count."""
    n = len(frame)
    micros = np.round(frame["time"].to_numpy(dtype="float64") * 1e6).astype("int64")
    values = frame["value"].to_numpy(dtype="float64")

    def text(values: Iterable[Any]) -> pa.Array:
        return pa.array(pd.Categorical([str(v) for v in values]))

    table = pa.Table.from_arrays(
        [
            pa.array(micros, type=pa.timestamp("us", tz="UTC")),
            text(frame["metric"]),
            pa.array(values, mask=np.isnan(values)),
            text(frame["unit"]),
            text([source] * n),
            text([entity] * n),
            text(frame["object"]),
            text(frame["instance"]),
            text(frame["counter"]),
            pa.array(np.full(n, point, dtype="int32")),
            pa.array(np.full(n, trial, dtype="int32")),
        ],
        schema=series_schema().with_metadata(
            {"vbench": json.dumps(metadata, default=str, sort_keys=True)}
        ),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    return n


def write_manifest(directory: Path, records: list[CollectorRecord]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / MANIFEST
    path.write_text(json.dumps([r.to_json() for r in records], indent=2, default=str) + "\n")
    return path


def read_manifests(run_dir: str | Path | None) -> list[dict[str, Any]]:
    """Every collector record of a run (with ``point`` and ``trial`` added), in order."""
    if not run_dir:
        return []
    root = Path(run_dir) / SERIES_DIR
    out: list[dict[str, Any]] = []
    if not root.is_dir():
        return out
    for path in sorted(root.glob(f"*/{MANIFEST}"), key=_trial_key):
        point, trial = _trial_key(path)
        try:
            records = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for rec in records:
            out.append({"point": point, "trial": trial, **rec})
    return out


def _trial_key(path: Path) -> tuple[int, int]:
    m = re.match(r"(\d+)-(\d+)$", path.parent.name)
    return (int(m.group(1)), int(m.group(2))) if m else (-1, -1)


def collector_warnings(run_dir: str | Path | None) -> list[str]:
    """One line per failed collector and per clock or coverage warning of a run."""
    out: list[str] = []
    for rec in read_manifests(run_dir):
        where = f"point {rec['point'] + 1} trial {rec['trial']}"
        if rec.get("status") == "failed":
            need = " (required)" if rec.get("required") else ""
            out.append(
                f"collector {rec.get('collector')} on {rec.get('target')} failed{need}, "
                f"{where}: {rec.get('error')}"
            )
        out.extend(f"{where}: {w}" for w in rec.get("warnings") or [])
    return out


def series_listing(run_dir: str | Path | None) -> list[dict[str, Any]]:
    """Per collector × target: trials collected and failed, metrics, rows, clock offset
    range, the series files and the last error (what `vbench show` prints)."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in read_manifests(run_dir):
        key = (str(rec.get("collector")), str(rec.get("target")))
        g = groups.setdefault(key, {
            "collector": key[0], "kind": rec.get("kind"), "target": key[1], "trials": 0,
            "failed": 0, "metrics": 0, "rows": 0, "files": [], "clock_offsets": [],
            "errors": [],
        })  # fmt: skip
        g["trials"] += 1
        if rec.get("status") == "failed":
            g["failed"] += 1
            g["errors"].append(f"point {rec['point'] + 1} trial {rec['trial']}: {rec.get('error')}")
        g["metrics"] = max(g["metrics"], int(rec.get("metrics") or 0))
        g["rows"] += int(rec.get("rows") or 0)
        if rec.get("file"):
            g["files"].append(rec["file"])
        if rec.get("clock_offset") is not None:
            g["clock_offsets"].append(float(rec["clock_offset"]))
    return list(groups.values())
