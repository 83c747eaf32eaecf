"""esxtop batch CSV (``esxtop -b``) → tidy records and Parquet, streaming and column-selective.

A capture has one column per counter — often 10,000 to 100,000 of them — and one line
per sample, hundreds of MB to GB in all. :class:`EsxtopReader` reads it in blocks and
keeps only the selected columns, so memory is bounded by the block size and the
selection, never by the file. Rows whose commas sit where the first data row's do are
cut with vectorised NumPy (the fast path); any other row is split cell by cell, so the
quirks described in :mod:`vbench.parsers.esxtop.csvfile` are handled on both paths.

Tidy record: ``time`` (UTC), ``host``, ``object``, ``instance``, ``counter``, ``value``
(None when the cell was empty or not a number) and ``unit`` (from the counter name).
Every irregularity found is added to :attr:`EsxtopReader.notes`.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from vbench.errors import ConfigError, ParseError
from vbench.lazy import lazy_module
from vbench.parsers.base import ToolParser, register
from vbench.parsers.esxtop.csvfile import (
    STAMP_MINUTE,
    Header,
    Layout,
    StampReader,
    build_layout,
    cell_value,
    parse_header,
    split_cells,
)
from vbench.parsers.esxtop.names import ColumnName, Selection, compile_selection, unit_of

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
else:
    np = lazy_module("numpy")
    pa = lazy_module("pyarrow")

DEFAULT_BLOCK = 4 << 20  # bytes read at a time (a few rows; cache-friendly)
_MAX_HEADER = 256 << 20  # a header longer than this is not an esxtop header
_GZ_STEP = 64 << 10
_NL, _COMMA, _QUOTE, _CR = 10, 44, 34, 13


@dataclass(frozen=True)
class EsxtopBatch:
    """Consecutive samples: ``times`` (n,) epoch seconds UTC, ``values`` (n, k) with NaN
    for a missing value; column j of ``values`` is ``reader.columns[j]``."""

    times: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return int(self.times.shape[0])


def open_capture(path: Path) -> IO[bytes]:
    """The file, decompressed on the fly when it is gzip (collectors store .csv.gz)."""
    fh = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    magic = fh.read(2)
    fh.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[return-value]
    return fh


class EsxtopReader:
    """One esxtop capture, read lazily. Iterate :meth:`batches` (or use the helpers)."""

    def __init__(
        self,
        path: str | Path,
        select: Iterable[str] | Selection | None = None,
        *,
        day: date | None = None,
        spread_minutes: bool = False,
        block_bytes: int = DEFAULT_BLOCK,
        require_match: bool = True,
    ) -> None:
        self.path = Path(path)
        self.source = str(path)
        self.block_bytes = max(4096, int(block_bytes))
        self.spread_minutes = spread_minutes
        self.notes: list[str] = []
        self.rows_read = 0
        self.max_buffer = 0  # the largest block held at once (bytes), for tests and bench
        self._day = day
        self._gz_broken = False
        selection = select if isinstance(select, Selection) else compile_selection(select or ())
        self.selection = selection
        self._fh = open_capture(self.path)
        try:
            text, self._rest, self._newline = self._read_header()
            self.header: Header = parse_header(text, self.source)
        except BaseException:
            self._fh.close()
            raise
        self.notes.extend(self.header.notes)
        self.selected, missing = selection.match(self.header.columns)
        if missing:
            if require_match:
                self._fh.close()
                raise ConfigError(f"{self.source}: " + "; ".join(missing))
            self.notes.extend(missing)
        self.columns: tuple[ColumnName, ...] = tuple(self.header.columns[i] for i in self.selected)
        self.units: tuple[str, ...] = tuple(unit_of(c.counter) for c in self.columns)

    # -- lifetime ------------------------------------------------------------------------
    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> EsxtopReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- header --------------------------------------------------------------------------
    def _read(self, size: int | None = None) -> bytes:
        size = size or self.block_bytes
        if not isinstance(self._fh, gzip.GzipFile):
            return self._fh.read(size)
        # Small reads: a stream cut short raises on the read that reaches the cut, and
        # everything that read had decompressed is lost with it.
        parts: list[bytes] = []
        got = 0
        while got < size and not self._gz_broken:
            try:
                part = self._fh.read(min(_GZ_STEP, size - got))
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                # A capture compressed as it arrived and cut off (collector killed):
                # keep what was written up to the last complete line.
                self.notes.append(f"compressed stream ends early ({exc}); read up to there")
                self._gz_broken = True
                break
            if not part:
                break
            parts.append(part)
            got += len(part)
        return b"".join(parts)

    def _read_into(self, view: memoryview) -> int:
        if not isinstance(self._fh, gzip.GzipFile):
            return self._fh.readinto(view)  # type: ignore[attr-defined]
        data = self._read(len(view))
        view[: len(data)] = data
        return len(data)

    def _read_header(self) -> tuple[str, bytes, bytes]:
        buf = b""
        while True:
            cut = _first_terminator(buf)
            if cut is not None:
                break
            data = self._read()
            if not data:
                if not buf.strip():
                    raise ParseError(f"{self.source}: empty file")
                cut = (len(buf), 0)
                break
            buf += data
            if len(buf) > _MAX_HEADER:
                raise ParseError(f"{self.source}: no line end in the first {_MAX_HEADER} bytes")
        end, term_len = cut
        newline = buf[end : end + term_len] or b"\n"
        if newline == b"\r":
            self.notes.append("lines end with CR only (a spreadsheet re-save?)")
        elif newline == b"\r\n":
            self.notes.append("lines end with CRLF")
        text = buf[:end].decode("utf-8", errors="replace").lstrip("\ufeff")
        return text, buf[end + term_len :], newline

    # -- rows ----------------------------------------------------------------------------
    def _blocks(self) -> Iterator[tuple[memoryview, bool]]:
        """Blocks of whole lines (the last block may lack its final line end), and
        whether it is the last. Read into one reused buffer: no per-block copies."""
        buf = bytearray(max(self.block_bytes, 2 * len(self._rest)))
        cr_only = self._newline == b"\r"
        filled = len(self._rest)
        buf[:filled] = self._rest.replace(b"\r", b"\n") if cr_only else self._rest
        while True:
            got = self._read_into(memoryview(buf)[filled:]) if filled < len(buf) else 0
            if cr_only and got:
                buf[filled : filled + got] = buf[filled : filled + got].replace(b"\r", b"\n")
            filled += got
            if got and filled < len(buf):
                continue
            self.max_buffer = max(self.max_buffer, len(buf))
            if not got and filled < len(buf):  # end of file
                if filled:
                    yield memoryview(buf)[:filled], True
                return
            cut = buf.rfind(b"\n", 0, filled)
            if cut < 0:  # a line longer than the buffer: grow it
                bigger = bytearray(2 * len(buf))
                bigger[:filled] = buf[:filled]
                buf = bigger
                continue
            yield memoryview(buf)[: cut + 1], False
            tail = filled - cut - 1
            buf[:tail] = buf[cut + 1 : filled]  # same-size move: the buffer is reused
            filled = tail

    def batches(self) -> Iterator[EsxtopBatch]:
        """The samples, block by block, in file order (duplicates dropped; see notes)."""
        state = _RowState(self)
        held: list[EsxtopBatch] = []
        for block, last in self._blocks():
            batch = state.block(block, last)
            if batch is None or not len(batch):
                continue
            self.rows_read += len(batch)
            if state.stamps.style == STAMP_MINUTE:
                held.append(batch)  # spread once every minute's samples are known
            else:
                yield batch
        if held:
            yield _spread(held, self.notes)
        if state.dropped:
            self.notes.append(f"{state.dropped} repeated samples dropped (same time and values)")

    # -- conveniences --------------------------------------------------------------------
    def arrow_batches(
        self, target: str | None = None, shift: float = 0.0
    ) -> Iterator[pa.RecordBatch]:
        """Tidy Arrow record batches (see :func:`tidy_schema`; a ``target`` column replaces
        ``host`` when ``target`` is given). ``shift`` is subtracted from every time."""
        from vbench.parsers.esxtop.arrow import column_dictionaries, tidy_batch, tidy_schema

        dicts = column_dictionaries(self.columns, self.units, target)
        schema = tidy_schema(target is not None)
        for batch in self.batches():
            yield tidy_batch(batch, dicts, schema, shift)

    def read_all(self) -> EsxtopBatch:
        parts = list(self.batches())
        if not parts:
            return EsxtopBatch(np.empty(0), np.empty((0, len(self.columns))))
        return EsxtopBatch(
            np.concatenate([p.times for p in parts]), np.vstack([p.values for p in parts])
        )

    def records(self) -> Iterator[dict[str, Any]]:
        """Tidy records as dicts (time as epoch seconds, value None when missing)."""
        for batch in self.batches():
            for i in range(len(batch)):
                t = float(batch.times[i])
                for j, col in enumerate(self.columns):
                    v = batch.values[i, j]
                    yield {
                        "time": t,
                        "host": col.host,
                        "object": col.object,
                        "instance": col.instance,
                        "counter": col.counter,
                        "value": None if np.isnan(v) else float(v),
                        "unit": self.units[j],
                    }


def _first_terminator(buf: bytes) -> tuple[int, int] | None:
    """(offset, length) of the first line end in ``buf``: LF, CRLF or a lone CR."""
    lf, cr = buf.find(b"\n"), buf.find(b"\r")
    if cr >= 0 and (lf < 0 or cr < lf):
        if cr + 1 >= len(buf):
            return None  # cannot tell CR from CRLF yet
        return (cr, 2) if buf[cr + 1 : cr + 2] == b"\n" else (cr, 1)
    return (lf, 1) if lf >= 0 else None


class _RowState:
    """What the row reader carries from block to block."""

    def __init__(self, reader: EsxtopReader) -> None:
        self.r = reader
        self.stamps = StampReader(reader.source, reader.header.bias_minutes, reader._day)
        self.layout: Layout | None = None
        self.layout_tried = False
        self.line = 1  # number of the last line consumed (the header is line 1)
        self.last_time: float | None = None
        self.seen: dict[float, int] = {}
        self.dropped = 0
        self.skipped = 0

    def block(self, block: memoryview | bytes, last: bool) -> EsxtopBatch | None:
        if block[-1:] != b"\n":
            block = bytes(block) + b"\n"  # the file's last line had no line end
        nl = _line_ends(block)
        if self.layout is None and not self.layout_tried:
            self._first_row(block, int(nl[0]))
        k = len(self.r.selected)
        arr = np.frombuffer(block, dtype=np.uint8)
        starts = np.empty_like(nl)
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
        times = np.empty(len(nl))
        values = np.full((len(nl), k), np.nan)
        keep = np.ones(len(nl), dtype=bool)
        regular = np.zeros(len(nl), dtype=bool)
        if self.layout is not None:
            regular = self._fast(block, arr, nl, starts, times, values)
        for i in np.flatnonzero(~regular):
            final = last and i == len(nl) - 1
            keep[i] = self._slow(block, int(starts[i]), int(nl[i]), times, values, int(i), final)
        keep &= self._order(times, values, keep)
        self.line += len(nl)
        return EsxtopBatch(times[keep], values[keep])

    def _first_row(self, block: memoryview | bytes, end: int) -> None:
        self.layout_tried = True
        row = str(block[:end], "latin-1")
        if not row.strip():
            return
        first = row.split(",", 1)[0].strip().strip('"')
        style = self.stamps.detect(first, self.line + 1)
        if style == STAMP_MINUTE and not self.r.spread_minutes:
            raise ParseError(
                f"{self.r.source}:{self.line + 1}: time stamps have no seconds ({first!r}): the "
                "file was re-saved by a spreadsheet and several samples share each minute. "
                "Use --spread-minutes to place them evenly within their minute (an "
                "estimate), or read the original capture."
            )
        self.layout = build_layout(row, self.r.selected, self.r.header.width)

    def _fast(
        self,
        block: memoryview | bytes,
        arr: np.ndarray,
        nl: np.ndarray,
        starts: np.ndarray,
        times: np.ndarray,
        values: np.ndarray,
    ) -> np.ndarray:
        layout = self.layout
        assert layout is not None
        commas = np.flatnonzero(arr == _COMMA)
        first = np.searchsorted(commas, starts)
        counts = np.searchsorted(commas, nl) - first
        regular = counts == layout.commas
        rows = np.flatnonzero(regular)
        if not len(rows):
            return regular
        base = first[rows]
        ends0 = commas[base] if layout.commas else nl[rows]
        for n, i in enumerate(rows):
            text = str(block[starts[i] : ends0[n]], "latin-1").strip().strip('"')
            times[i] = self.stamps(text, self.line + 1 + int(i))
        if len(layout.fields):
            s, e = _field_spans(layout, commas, base, starts[rows], nl[rows], arr)
            values[rows] = _to_float(arr, s, e)
            if layout.has_glued:
                self._glued(block, layout, s, e, rows, values)
        return regular

    def _glued(
        self,
        block: memoryview | bytes,
        layout: Layout,
        s: np.ndarray,
        e: np.ndarray,
        rows: np.ndarray,
        values: np.ndarray,
    ) -> None:
        for j, piece in enumerate(layout.pieces):
            if piece < 0:
                continue
            for n, i in enumerate(rows):
                # s/e were trimmed of an outer quote; the piece split needs the raw field.
                raw = str(block[max(0, s[n, j] - 1) : e[n, j] + 1], "latin-1").strip(",\r\n")
                cells, _ = split_cells(raw)
                values[i, j] = _value(cells[piece].text if piece < len(cells) else "")

    def _slow(
        self,
        block: memoryview | bytes,
        start: int,
        end: int,
        times: np.ndarray,
        values: np.ndarray,
        i: int,
        final: bool,
    ) -> bool:
        line_no = self.line + 1 + i
        row = str(block[start:end], "latin-1").rstrip("\r")
        if not row.strip():
            return False
        cells, notes = split_cells(row)
        width = self.r.header.width
        # A row may lack the trailing empty cell the header has (or carry one more).
        if len(cells) not in (width, width - 1, width + 1) or notes:
            what = f"{len(cells)} cells where the header has {width}"
            if final:
                self.r.notes.append(f"line {line_no}: last line cut short ({what}); dropped")
            else:
                self.r.notes.append(f"line {line_no}: {what}; skipped")
                self.skipped += 1
            return False
        times[i] = self.stamps(cells[0].text, line_no)
        for j, col in enumerate(self.r.selected):
            values[i, j] = _value(cells[col + 1].text) if col + 1 < len(cells) else np.nan
        return True

    def _order(self, times: np.ndarray, values: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Drop exact repeats of earlier samples; a sample earlier than its predecessor
        that repeats nothing means the file is not one capture."""
        ok = np.ones(len(times), dtype=bool)
        # Stamps without seconds repeat by nature: only a step back is suspicious there.
        minute = self.stamps.style == STAMP_MINUTE
        for i in np.flatnonzero(keep):
            t = float(times[i])
            digest = hash(values[i].tobytes())
            back = self.last_time is not None and (
                t < self.last_time or (t == self.last_time and not minute)
            )
            if back:
                if self.seen.get(t) == digest:
                    ok[i] = False
                    self.dropped += 1
                    continue
                if t < self.last_time:
                    raise ParseError(
                        f"{self.r.source}:{self.line + 1 + int(i)}: time goes back from "
                        f"{_fmt(self.last_time)} to {_fmt(t)} and the sample repeats no earlier "
                        "one: the file holds more than one capture"
                    )
            self.seen[t] = digest
            self.last_time = t
        return ok


def _line_ends(block: memoryview | bytes) -> np.ndarray:
    """Offsets of every b"\\n": a C-speed find per line (esxtop lines are long and few)."""
    raw = block.obj if isinstance(block, memoryview) else block
    stop = len(block)
    out = []
    pos = raw.find(b"\n", 0, stop)
    while pos >= 0:
        out.append(pos)
        pos = raw.find(b"\n", pos + 1, stop)
    return np.array(out, dtype=np.int64)


def _field_spans(
    layout: Layout,
    commas: np.ndarray,
    base: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    arr: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Start/end offsets (n rows × k fields) of the selected fields, outer quotes trimmed."""
    fk = np.asarray(layout.fields, dtype=np.int64)[None, :]
    b = base[:, None]
    last = len(commas) - 1
    s = np.where(fk == 0, starts[:, None], commas[np.clip(b + fk - 1, 0, last)] + 1)
    e = np.where(fk == layout.commas, ends[:, None], commas[np.clip(b + fk, 0, last)])
    nonempty = e > s
    s = s + (nonempty & (arr[np.minimum(s, len(arr) - 1)] == _QUOTE))
    e = e - ((e > s) & (arr[np.maximum(e - 1, 0)] == _QUOTE))
    e = e - ((e > s) & (arr[np.maximum(e - 1, 0)] == _CR))
    return s, e


def _to_float(arr: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Numbers from byte spans, all at once: gather into a fixed-width byte matrix and let
    NumPy parse it. Empty spans are NaN; a span that is not a number falls back to one
    parse per cell (and reads as NaN)."""
    n = e - s
    out = np.full(s.shape, np.nan)
    if not n.size:
        return out
    width = int(n.max())
    if width <= 0:
        return out
    flat_s, flat_n = s.reshape(-1), n.reshape(-1)
    ok = flat_n > 0
    offs = np.arange(width)
    idx = np.minimum(flat_s[ok, None] + offs, len(arr) - 1)
    chars = np.where(offs < flat_n[ok, None], arr[idx], 0).astype(np.uint8)
    text = chars.view(f"S{width}").reshape(-1)
    flat = out.reshape(-1)
    try:
        flat[ok] = text.astype(np.float64)
    except ValueError:
        flat[ok] = [_value(t.decode("latin-1")) for t in text]
    return out


def _value(text: str) -> float:
    v = cell_value(text)
    return np.nan if v is None else v


def _fmt(t: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def _spread(parts: Sequence[EsxtopBatch], notes: list[str]) -> EsxtopBatch:
    """Minute-resolution stamps: place the samples of each minute evenly in it.

    The interval is estimated from the minutes in the middle of the file (the first and
    last minutes are partial); the first minute's samples are aligned to its end and the
    last minute's to its start. Each time is an estimate good to about one interval.
    """
    times = np.concatenate([p.times for p in parts])
    values = np.vstack([p.values for p in parts])
    minutes, first, counts = np.unique(times, return_index=True, return_counts=True)
    inner = counts[1:-1] if len(counts) > 2 else counts
    interval = 60.0 / float(np.median(inner))
    out = np.empty_like(times)
    for g, (m, f, c) in enumerate(zip(minutes, first, counts, strict=True)):
        k = np.arange(c)
        if g == 0 and len(counts) > 1:
            out[f : f + c] = m + 60.0 - (c - k - 0.5) * interval
        elif g == len(counts) - 1 and len(counts) > 1:
            out[f : f + c] = m + (k + 0.5) * interval
        else:
            out[f : f + c] = m + (60.0 - c * interval) / 2 + (k + 0.5) * interval
    notes.append(
        f"time stamps had no seconds: {len(times)} samples spread within their minute at an "
        f"estimated {interval:.2f} s interval (each time is an estimate)"
    )
    return EsxtopBatch(out, values)


def write_parquet(reader: EsxtopReader, dest: Path, **kw: Any) -> int:
    """Stream the reader's tidy records into one Parquet file (see
    :func:`vbench.parsers.esxtop.arrow.write_parquet`); returns the row count."""
    from vbench.parsers.esxtop.arrow import write_parquet as write

    return write(reader, dest, **kw)


register(
    ToolParser(
        "esxtop",
        "esxtop batch captures (esxtop -b), any size, read column-selectively and streamed.",
    )
)
