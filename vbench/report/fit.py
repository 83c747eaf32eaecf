"""Plain-text tables and prose that fit a width without ever cutting or wrapping a word.

A table wider than the width moves its least needed columns (``fold``, in that order, as
many as it takes) out of the row onto indented lines under it, as ``name: value`` pairs
wrapped between pairs; prose is wrapped between words. Without a width nothing moves
and nothing wraps: cron logs and golden files read the same everywhere.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

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


# The width of a console off a terminal (a pipe, a cron log): wider than any line, so
# rich cuts and wraps nothing there (its own default would be 80 columns).
UNFITTED = 1 << 16


def console_width(console: Console) -> int | None:
    """The width ``console`` fits text to; None for one made :data:`UNFITTED`."""
    return None if console.width >= UNFITTED else console.width


def fit_table(table: Table, width: int | None, drop: Sequence[str] = ()) -> Table:
    """``table`` laid out for ``width`` columns: as it is when it fits; narrower, with light
    borders and each column as narrow as its longest word (headers included), the room
    left going to the columns that then fit on one line — cells wrap between words and
    no name or figure is cut. When even that is too wide, the columns headed ``drop``
    leave, in that order, as many as it takes, and a caption says which. Without a
    width nothing moves and the title stays on one line too."""
    from rich import box
    from rich.text import Text

    if isinstance(table.title, str | Text):
        title = Text(table.title) if isinstance(table.title, str) else table.title.copy()
        if width is None:
            title.no_wrap, title.overflow = True, "ignore"
        table.title = title
    for column in table.columns:
        column.overflow = "fold"  # a word longer than a whole screen: never an ellipsis
    # The default box: an edge each side, a rule and padding 1 each side between columns.
    if width is None or sum(_needs(table, _longest)) + 3 * len(table.columns) + 1 <= width:
        return table
    table.box, table.show_edge, table.pad_edge = box.SIMPLE_HEAD, False, False
    table.padding = (0, 1, 0, 0)  # with the box's blank rule: columns two spaces apart
    dropped = []
    for header in drop:
        if sum(_needs(table, _word)) + 2 * len(table.columns) - 2 <= width:
            break
        table.columns = [c for c in table.columns if _plain(c.header) != header]
        dropped.append(header)
    if dropped:
        table.caption = Text(f"{' and '.join(dropped)} left out to fit {width} columns "
                             "(a wider terminal or COLUMNS shows them)", style="dim")
        table.caption_justify = "left"
    _spread(table, width)
    return table


def _needs(table: Table, measure: Callable[[object], int]) -> list[int]:
    return [max([measure(c.header), *map(measure, c.cells)]) for c in table.columns]


def _spread(table: Table, width: int) -> None:
    """Each column as wide as its longest word, then the room left to the columns that
    it makes fit on one line, the nearest to it first."""
    longest, words = _needs(table, _longest), _needs(table, _word)
    room = width - sum(words) - 2 * len(words) + 2
    widths = list(words)
    for i in sorted(range(len(words)), key=lambda i: longest[i] - words[i]):
        grow = longest[i] - words[i]
        if 0 < grow <= room:
            widths[i], room = longest[i], room - grow
    for column, w in zip(table.columns, widths, strict=True):
        column.width = w


def _plain(cell: object) -> str:
    from rich.text import Text

    return cell.plain if isinstance(cell, Text) else str(cell)


def _longest(cell: object) -> int:
    return max((len(line) for line in _plain(cell).splitlines()), default=0)


def _word(cell: object) -> int:
    return max((len(w) for w in _plain(cell).split()), default=0)
