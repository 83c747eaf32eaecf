"""Plain-text tables and prose that fit a width without ever cutting or wrapping a word.

A table wider than the width moves its least needed columns (``fold``, in that order, as
many as it takes) out of the row onto indented lines under it, as ``name: value`` pairs
wrapped between pairs; prose is wrapped between words. Without a width nothing moves
and nothing wraps: cron logs and golden files read the same everywhere.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GAP = "  "  # between columns
INDENT = "    "  # of the lines a row's folded cells go to
PAIR_GAP = "   "  # between two folded name: value pairs


@dataclass(frozen=True)
class Fitted:
    """A laid-out table: its lines, where each row's own line is, and where each kept
    column starts on those lines (for colouring a column afterwards)."""

    lines: tuple[str, ...]
    row_lines: tuple[int, ...]  # index in ``lines`` of each row's (first) line
    offsets: Mapping[int, tuple[int, int]]  # kept column -> (start, width) on row lines


def _widths(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    widths = [len(h) for h in head]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r, strict=True)]
    return widths


def _span(widths: Sequence[int], keep: Sequence[int]) -> int:
    return sum(widths[i] for i in keep) + len(GAP) * max(0, len(keep) - 1)


def fit(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Sequence[int] = (),
    *,
    width: int | None = None,
    fold: Sequence[int | Sequence[int]] = (),
    names: Mapping[int, str] | None = None,
) -> Fitted:
    """Columns padded to their widest cell, two spaces apart, trailing blanks removed; with
    ``width``, the ``fold`` columns (or groups of columns that go together) leave the
    table in that order until it fits, and each row's folded cells follow it as
    ``name: value`` (``names`` may shorten a header there; an empty name shows the value
    alone). A cell that is empty or a dash is not repeated under its row."""
    widths = _widths(head, rows)
    keep = list(range(len(head)))
    for group in fold:
        if width is None or _span(widths, keep) <= width:
            break
        for col in [group] if isinstance(group, int) else group:
            keep.remove(col)
    moved = [i for i in range(len(head)) if i not in keep]
    offsets, at = {}, 0
    for i in keep:
        offsets[i] = (at, widths[i])
        at += widths[i] + len(GAP)

    def line(cells: Sequence[str]) -> str:
        return GAP.join(cells[i].rjust(widths[i]) if i in right else cells[i].ljust(widths[i])
                        for i in keep).rstrip()

    lines, row_lines = [line(head)], []
    label = {i: (names or {}).get(i, head[i]) for i in moved}
    for r in rows:
        row_lines.append(len(lines))
        lines.append(line(r))
        pairs = [f"{label[i]}: {r[i]}" if label[i] else r[i]
                 for i in moved if r[i].strip() not in ("", "-", "—")]
        lines += pack(pairs, width)
    return Fitted(tuple(lines), tuple(row_lines), offsets)


def table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Sequence[int] = (),
    *,
    width: int | None = None,
    fold: Sequence[int | Sequence[int]] = (),
    names: Mapping[int, str] | None = None,
) -> list[str]:
    """The lines of :func:`fit`."""
    return list(fit(head, rows, right, width=width, fold=fold, names=names).lines)


def pack(
    pairs: Sequence[str], width: int | None, indent: str = INDENT, gap: str = PAIR_GAP
) -> list[str]:
    """Indented lines holding the pairs in order, ``gap`` apart, as many per line as fit;
    a pair wider than the line on its own is wrapped between its words."""
    out: list[str] = []
    current = ""
    for pair in pairs:
        joined = f"{current}{gap}{pair}" if current else pair
        if width is None or len(indent) + len(joined) <= width:
            current = joined
            continue
        if current:
            out.append(indent + current)
        if len(indent) + len(pair) <= width:
            current = pair
        else:  # alone too wide: between its words, continuation indented further
            out += wrap(pair, width, indent, indent + "  ")
            current = ""
    if current:
        out.append(indent + current)
    return out


def wrap(text: str, width: int | None, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` as lines no wider than ``width``, broken between words only (a word
    longer than the line stays whole); one line when there is no width."""
    if width is None:
        return [first + text]
    return textwrap.wrap(text, width=width, initial_indent=first,
                         subsequent_indent=first if rest is None else rest,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]
