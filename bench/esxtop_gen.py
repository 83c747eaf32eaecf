"""Larger esxtop captures made from a real one: widen instances, repeat samples.

The corpus holds only two raw esxtop captures (a 17,427-column, 3-sample one among
them). To test and measure the reader at the sizes real captures reach (tens of
thousands of columns, hundreds of MB to GB), this takes a real capture and

- widens it: the columns of per-VM/per-world objects (Group Cpu, Vcpu, Group Memory,
  Virtual Disk, Network Port) are cloned under new instance names ``<instance> (wN)``
  — which also gives instances nested parentheses — until the header has ``columns``
  columns; every clone carries its source column's values;
- lengthens it: samples cycle through the real ones, stamped ``interval`` seconds
  apart from ``start``.

Everything else of the source line is kept byte for byte (quoting, the trailing
comma, the unquoted fragments glued into the PCPU power-state block).

    python -m bench.esxtop_gen SOURCE DEST --columns 20000 --size 1G
"""

from __future__ import annotations

import argparse
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

from vbench.parsers.esxtop.csvfile import Cell, split_cells
from vbench.parsers.esxtop.names import parse_column_name

CLONED_OBJECTS = ("Group Cpu", "Vcpu", "Group Memory", "Virtual Disk", "Network Port")


@dataclass(frozen=True)
class Generated:
    path: Path
    columns: int
    rows: int
    bytes: int


def _raw_cells(line: str, cells: list[Cell]) -> list[str]:
    """Each cell's text as written (quotes kept, separator dropped)."""
    out = []
    for i, cell in enumerate(cells):
        if i + 1 < len(cells):
            nxt = cells[i + 1]
            end = nxt.start - (0 if nxt.glued else 1)
        else:
            end = len(line)
        out.append(line[cell.start : end])
    return out


def _read_source(source: Path) -> tuple[str, list[str]]:
    text = source.read_bytes().decode("utf-8")
    lines = [ln for ln in re.split(r"\r\n|\n|\r", text) if ln.strip()]
    return lines[0], lines[1:]


def widen(
    source: Path,
    dest: Path,
    *,
    columns: int | None = None,
    rows: int | None = None,
    size: int | None = None,
    interval: float = 5.0,
    start: float | None = None,
) -> Generated:
    """Write a capture of ``columns`` columns and ``rows`` samples (or about ``size`` bytes)."""
    header, data = _read_source(source)
    hcells, _ = split_cells(header)
    quoted = header.startswith('"')
    names = [c.text for c in hcells]
    pool = [
        i
        for i, name in enumerate(names)
        if (col := parse_column_name(name)) is not None
        and col.object in CLONED_OBJECTS
        and col.instance
    ]
    have = len(hcells) - 1
    extra = max(0, (columns or have) - have)
    clones: list[tuple[int, str]] = []
    for k in range(1, math.ceil(extra / len(pool)) + 1 if pool else 1):
        for i in pool:
            col = parse_column_name(names[i])
            assert col is not None
            name = f"\\\\{col.host}\\{col.object}({col.instance} (w{k}))\\{col.counter}"
            clones.append((i, f'"{name}"' if quoted else name))
    clones = clones[:extra]
    head_raw = _raw_cells(header, hcells)
    new_header = _insert(header, head_raw[0], [c for _, c in clones])
    templates = []
    for line in data:
        cells, _ = split_cells(line)
        raw = _raw_cells(line, cells)
        body = _insert(line, raw[0], [raw[i] for i, _ in clones])
        templates.append(body[len(raw[0]) :].encode("latin-1") + b"\n")
    head_bytes = (new_header + "\n").encode("utf-8")
    if rows is None:
        avg = sum(len(t) for t in templates) / len(templates) + 22
        rows = max(1, math.ceil(((size or 0) - len(head_bytes)) / avg))
    t0 = time.time() - rows * interval if start is None else start
    written = len(head_bytes)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb", buffering=8 << 20) as fh:
        fh.write(head_bytes)
        for r in range(rows):
            stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime(t0 + r * interval))
            cell = f'"{stamp}"' if quoted else stamp
            line = cell.encode() + templates[r % len(templates)]
            fh.write(line)
            written += len(line)
    return Generated(dest, have + len(clones), rows, written)


def _insert(line: str, first_raw: str, cells: list[str]) -> str:
    """``line`` with ``cells`` inserted right after its first cell."""
    if not cells:
        return line
    rest = line[len(first_raw) + 1 :]
    return f"{first_raw},{','.join(cells)},{rest}"


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)", text.strip().upper())
    if m is None:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (e.g. 500M, 1G)")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--columns", type=int)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--size", type=_size)
    ap.add_argument("--interval", type=float, default=5.0)
    a = ap.parse_args()
    g = widen(a.source, a.dest, columns=a.columns, rows=a.rows, size=a.size, interval=a.interval)
    print(f"{g.path}: {g.columns} columns, {g.rows} samples, {g.bytes / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
