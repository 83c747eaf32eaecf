"""Tidy Arrow batches and Parquet files from an :class:`~vbench.parsers.esxtop.EsxtopReader`.

One record per sample and selected column: ``time`` (UTC), ``host`` (or ``target``),
``object``, ``instance``, ``counter``, ``value`` (null when missing) and ``unit``; text
columns are dictionary-encoded (a few hundred distinct values for millions of rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vbench.lazy import lazy_module
from vbench.parsers.esxtop.names import ColumnName

if TYPE_CHECKING:
    from vbench.parsers.esxtop import EsxtopBatch, EsxtopReader


if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
else:
    np = lazy_module("numpy")
    pa = lazy_module("pyarrow")

_ROW_GROUP = 1 << 20  # tidy rows per Parquet row group


def tidy_schema(with_target: bool = False) -> pa.Schema:
    """time (UTC), host|target, object, instance, counter, value (null = missing), unit."""
    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema(
        [
            pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("target" if with_target else "host", text),
            pa.field("object", text),
            pa.field("instance", text),
            pa.field("counter", text),
            pa.field("value", pa.float64()),
            pa.field("unit", text),
        ]
    )


def column_dictionaries(
    columns: Sequence[ColumnName], units: Sequence[str], target: str | None
) -> list[tuple[np.ndarray, pa.Array]]:
    """Per text field: each column's index into a dictionary of distinct values."""
    fields = [
        [target if target is not None else c.host for c in columns],
        [c.object for c in columns],
        [c.instance for c in columns],
        [c.counter for c in columns],
        list(units),
    ]
    out = []
    for values in fields:
        distinct = list(dict.fromkeys(values))
        pos = {v: i for i, v in enumerate(distinct)}
        out.append((np.array([pos[v] for v in values], dtype=np.int32), pa.array(distinct)))
    return out


def tidy_batch(
    batch: EsxtopBatch,
    dicts: list[tuple[np.ndarray, pa.Array]],
    schema: pa.Schema,
    shift: float,
) -> pa.RecordBatch:
    n, k = batch.values.shape
    micros = np.round((batch.times - shift) * 1e6).astype(np.int64)
    time = pa.array(np.repeat(micros, k), type=pa.timestamp("us", tz="UTC"))
    texts = [
        pa.DictionaryArray.from_arrays(pa.array(np.tile(idx, n)), dictionary)
        for idx, dictionary in dicts
    ]
    flat = batch.values.reshape(-1)
    value = pa.array(flat, mask=np.isnan(flat))
    return pa.RecordBatch.from_arrays([time, *texts[:4], value, texts[4]], schema=schema)


def write_parquet(
    reader: EsxtopReader,
    dest: Path,
    *,
    target: str | None = None,
    shift: float = 0.0,
    metadata: dict[str, str] | None = None,
) -> int:
    """Stream the reader's tidy records into one Parquet file; returns the row count."""
    import pyarrow.parquet as pq

    schema = tidy_schema(target is not None)
    if metadata:
        schema = schema.with_metadata({**(schema.metadata or {}), **metadata})
    rows = 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    pending: list[pa.RecordBatch] = []
    held = 0
    with pq.ParquetWriter(dest, schema, compression="zstd") as writer:
        for rb in reader.arrow_batches(target=target, shift=shift):
            pending.append(rb)
            held += rb.num_rows
            rows += rb.num_rows
            if held >= _ROW_GROUP:  # few large row groups: faster to write and to read
                writer.write_table(pa.Table.from_batches(pending, schema=schema))
                pending, held = [], 0
        if pending:
            writer.write_table(pa.Table.from_batches(pending, schema=schema))
    return rows
