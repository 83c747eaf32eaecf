"""Hand-written SVG for the report's charts: scales, ticks, axes, legend, text.

Why not a plotting library: a report draws dozens of simple charts (bars, lines with
whiskers, time series) and matplotlib spent 70–250 ms on each, most of the report's
time. The marks here are a few rectangles, lines and polylines; text stays text (a
reader can select it, a test can read it) and every string is XML-escaped here, so a
label from a lab can never become markup.

Coordinates are in SVG user units; the root has a ``viewBox`` and the page scales the
chart to its column (``max-width: 100%``). Nothing is clipped: a chart's value range
is computed from everything it draws (data, whiskers, ideal lines, limits).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from markupsafe import escape

FONT = 11.0
SMALL = 9.5
CHAR_W = 0.58  # average glyph width in font sizes: room reserved for a label
INK = "#222222"
MUTED = "#666666"
GRID = "#e2e2e2"
# A colour-blind-safe qualitative palette (Okabe–Ito, then greys).
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
           "#f0e442", "#000000", "#777777", "#bbbbbb")  # fmt: skip
# A disturbed trial (vbench/report/disturbed.py): a diamond in this colour, outlined.
DISTURBED = "#d55e00"
WIDE = 760.0  # user units: a chart wider than this spans both columns of the page
MAX_LABEL = 28  # characters of a tick or legend label; the tables carry the full text
_SUFFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def esc(text: object) -> str:
    return str(escape(str(text)))


def short(label: str, limit: int = MAX_LABEL) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def distinct_short(labels: Sequence[str], limit: int = MAX_LABEL) -> list[str]:
    """``labels`` cut to ``limit`` characters, still telling apart the labels that differ:
    when cutting the end would make two the same ("vcenter=baseline, sessions=…" twice),
    the part they all share is cut from the front instead ("…sessions=8, profile=ba…"),
    and failing that the middle."""
    cut = [short(lab, limit) for lab in labels]
    if len(set(cut)) == len(set(labels)):
        return cut
    # The characters every label starts with (a string prefix, not path components).
    same = next((i for i, c in enumerate(zip(*labels, strict=False)) if len(set(c)) > 1),
                min(map(len, labels)))
    shared = labels[0][:same]
    start = shared.rfind(", ") + 2 if ", " in shared else max(0, len(shared) - 8)
    cut = [lab if len(lab) <= limit else short("…" + lab[start:], limit) for lab in labels]
    if len(set(cut)) == len(set(labels)):
        return cut
    head = (limit - 1) // 2
    tail = limit - 1 - head
    return [lab if len(lab) <= limit else f"{lab[:head]}…{lab[-tail:]}" for lab in labels]


def text_width(text: str, size: float = FONT) -> float:
    return len(text) * size * CHAR_W


def num(x: float) -> str:
    """A coordinate: two decimals at most, no trailing zeros."""
    return f"{x:.2f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


# ------------------------------------------------------------------ scales


def nice_step(span: float, count: int) -> float:
    raw = span / max(1, count)
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw * (1 - 1e-9))


def domain(values: Iterable[float | None], *, zero: bool = True) -> tuple[float, float]:
    """The range a value axis must show: every finite value (and 0 when ``zero`` and no
    value is negative, so that bars and throughputs start at zero)."""
    found = [v for v in values if v is not None and math.isfinite(v)]
    if not found:
        return 0.0, 1.0
    lo, hi = min(found), max(found)
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:
        pad = abs(hi) * 0.1 or 1.0
        lo, hi = (lo - pad if lo < 0 or not zero else lo), hi + pad
    return lo, hi


def ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (the first ≤ lo, the last ≥ hi)."""
    step = nice_step(hi - lo, count)
    start = math.floor(lo / step + 1e-9) * step
    out = [start]
    while out[-1] < hi - step * 1e-9:
        out.append(start + step * len(out))
    return [0.0 if abs(t) < step * 1e-9 else t for t in out]


def tick_texts(values: Sequence[float]) -> list[str]:
    """Axis numbers: 0, 2.5, 150, 12k, 1.5M — as few digits as the step needs; a k or M
    suffix only once the axis reaches 10,000 (800 and 1,000 read better than 1.0k)."""
    step = abs(values[1] - values[0]) if len(values) > 1 else 1.0
    compact = max((abs(v) for v in values), default=0.0) >= 1e4
    return [tick_text(v, step, compact) for v in values]


def tick_text(value: float, step: float, compact: bool = True) -> str:
    a = abs(value)
    for bound, suffix in _SUFFIXES if compact else ():
        if a >= bound:
            return _fixed(value / bound, step / bound) + suffix
    return _fixed(value, step or 1.0)


def _fixed(value: float, step: float) -> str:
    decimals = next((d for d in range(7) if abs(round(step, d) - step) <= step * 1e-6), 6)
    text = f"{value:,.{decimals}f}"
    return "0" if text.strip("-0.,") == "" else text


def fitting_labels(centres: Sequence[float], texts: Sequence[str], size: float = SMALL,
                   gap: float = 4.0, first: Iterable[int] = ()) -> list[bool]:
    """Which of the axis labels centred at ``centres`` (pixels, increasing) to print so
    that no two overlap: those of ``first`` (a find-max answer's levels), then the first
    and the last, then every other label that keeps ``gap`` clear of those kept, from
    the left. Levels crowded together (a search's 400, 412, 425, 450 on an axis to
    1,600) keep their tick marks; the tables carry every level."""
    n = len(centres)
    half = [text_width(t, size) / 2 for t in texts]
    kept: list[int] = []
    for i in [*first, 0, n - 1, *range(1, n - 1)]:
        if 0 <= i < n and i not in kept and all(
                abs(centres[i] - centres[j]) >= half[i] + half[j] + gap for j in kept):
            kept.append(i)
    return [i in kept for i in range(n)]


@dataclass(frozen=True)
class Scale:
    """Maps values of [lo, hi] onto pixels [p0, p1] (log2 when ``log``)."""

    lo: float
    hi: float
    p0: float
    p1: float
    log: bool = False

    def __call__(self, v: float) -> float:
        if self.log:
            a, b, v = math.log2(self.lo), math.log2(self.hi), math.log2(max(v, 1e-300))
        else:
            a, b = self.lo, self.hi
        return self.p0 + (v - a) / ((b - a) or 1.0) * (self.p1 - self.p0)


# ------------------------------------------------------------------ canvas


@dataclass(frozen=True)
class TrialMark:
    """A disturbed trial's value drawn on a chart of means (its tooltip: ``label``)."""

    value: float
    label: str



@dataclass
class Legend:
    """Entries drawn right of the plot: (label, colour, kind) with kind box | line | dash |
    diamond (a disturbed trial's mark)."""

    title: str = ""
    entries: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, label: str, color: str, kind: str) -> None:
        if label and (label, color, kind) not in self.entries:
            self.entries.append((label, color, kind))

    def width(self) -> float:
        if not self.entries:
            return 0.0
        longest = max([text_width(t, SMALL) for t in self.texts()]
                      + [text_width(self.title, SMALL)])
        return min(200.0, longest + 34.0)

    def texts(self) -> list[str]:
        """The entries as drawn: cut to fit, but never cut into the same text."""
        return distinct_short([e[0] for e in self.entries])


@dataclass
class Canvas:
    """One chart: a plot area inside margins, and the SVG elements drawn so far."""

    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    parts: list[str] = field(default_factory=list)

    @property
    def x0(self) -> float:
        return self.left

    @property
    def x1(self) -> float:
        return self.width - self.right

    @property
    def y0(self) -> float:  # the bottom of the plot area (SVG y grows downwards)
        return self.height - self.bottom

    @property
    def y1(self) -> float:
        return self.top

    def add(self, element: str) -> None:
        self.parts.append(element)

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = INK,
             width: float = 1.0, dash: str = "") -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
                 f'stroke="{color}" stroke-width="{num(width)}"{d}/>')

    def rect(self, x: float, y: float, w: float, h: float, fill: str,
             opacity: float = 1.0) -> None:
        o = f' fill-opacity="{num(opacity)}"' if opacity < 1 else ""
        self.add(f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0.0))}" '
                 f'height="{num(max(h, 0.0))}" fill="{fill}"{o}/>')

    def polyline(self, pts: Sequence[tuple[float, float]], color: str, width: float = 1.4,
                 dash: str = "", opacity: float = 1.0) -> None:
        if not pts:
            return
        d = f' stroke-dasharray="{dash}"' if dash else ""
        o = f' stroke-opacity="{num(opacity)}"' if opacity < 1 else ""
        flat = [c if math.isfinite(c) else 0.0 for xy in pts for c in xy]
        # One %-format for the whole line: a time series has hundreds of points.
        coords = (("%.1f,%.1f " * len(pts)) % tuple(flat)).rstrip()
        self.add(f'<polyline points="{coords}" fill="none" stroke="{color}" '
                 f'stroke-width="{num(width)}" stroke-linejoin="round"{d}{o}/>')

    def polyline_arrays(self, xs: np.ndarray, ys: np.ndarray, color: str, width: float,
                        opacity: float = 1.0) -> None:
        """:meth:`polyline` for coordinates already in arrays (time series)."""
        if not len(xs):
            return
        flat = np.nan_to_num(np.column_stack((xs, ys)).ravel())
        coords = (("%.1f,%.1f " * len(xs)) % tuple(flat.tolist())).rstrip()
        o = f' stroke-opacity="{num(opacity)}"' if opacity < 1 else ""
        self.add(f'<polyline points="{coords}" fill="none" stroke="{color}" '
                 f'stroke-width="{num(width)}" stroke-linejoin="round"{o}/>')

    def dot(self, x: float, y: float, color: str, r: float = 3.0) -> None:
        self.add(f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" fill="{color}"/>')

    def diamond(self, x: float, y: float, r: float = 4.5, label: str = "",
                cls: str = "disturbed", value: float | None = None) -> None:
        """A disturbed trial's mark (``label``: its tooltip, what a reader hovers and a
        test reads; ``value``: the figure drawn, kept on the element for a script;
        ``cls``: "key" in a legend)."""
        pts = (f"{num(x)},{num(y - r)} {num(x + r)},{num(y)} {num(x)},{num(y + r)} "
               f"{num(x - r)},{num(y)}")
        tip = f"<title>{esc(label)}</title>" if label else ""
        data = f' data-value="{value:g}"' if value is not None else ""
        self.add(f'<polygon class="{cls}" points="{pts}" fill="{DISTURBED}" '
                 f'stroke="{INK}" stroke-width="0.8"{data}>{tip}</polygon>')

    def event_line(self, x: float, label: str) -> None:
        """A disturbance's moment on a time axis: a dotted line the plot's height."""
        self.add(f'<line class="disturbed" x1="{num(x)}" y1="{num(self.y1)}" x2="{num(x)}" '
                 f'y2="{num(self.y0)}" stroke="{DISTURBED}" stroke-width="1.4" '
                 f'stroke-dasharray="2 2"><title>{esc(label)}</title></line>')

    def text(self, x: float, y: float, text: str, *, anchor: str = "middle",
             size: float = FONT, color: str = INK, rotate: float = 0.0, bold: bool = False,
             baseline: str = "") -> None:
        extra = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate else ""
        extra += ' font-weight="600"' if bold else ""
        extra += f' dominant-baseline="{baseline}"' if baseline else ""
        self.add(f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}" '
                 f'font-size="{num(size)}" fill="{color}"{extra}>{esc(text)}</text>')

    def whisker(self, x: float, lo: float, hi: float, color: str = INK, cap: float = 4.0
                ) -> None:
        self.line(x, lo, x, hi, color, 1.0)
        self.line(x - cap, lo, x + cap, lo, color, 1.0)
        self.line(x - cap, hi, x + cap, hi, color, 1.0)

    # -------------------------------------------------------------- furniture

    def y_axis(self, scale: Scale, values: Sequence[float], label: str,
               texts: Sequence[str] | None = None) -> None:
        for v, text in zip(values, texts or tick_texts(values), strict=True):
            y = scale(v)
            self.line(self.x0, y, self.x1, y, GRID, 0.8)
            self.text(self.x0 - 5, y + 3.5, text, anchor="end", size=SMALL)
        self.line(self.x0, self.y0, self.x0, self.y1, MUTED, 0.8)
        if label:
            mid = (self.y0 + self.y1) / 2
            self.text(13, mid, short(label, 60), rotate=-90)

    def x_label(self, label: str) -> None:
        if label:
            self.text((self.x0 + self.x1) / 2, self.height - 6, short(label, 80))

    def title(self, text: str) -> None:
        if text:
            self.text((self.x0 + self.x1) / 2, 15, short(text, 90), bold=True)

    def legend(self, legend: Legend) -> None:
        if not legend.entries:
            return
        x, y = self.x1 + 12, self.y1 + 4
        if legend.title:
            self.text(x, y + 8, short(legend.title), anchor="start", size=SMALL, bold=True)
            y += 15
        for (_, color, kind), label in zip(legend.entries, legend.texts(), strict=True):
            if kind == "box":
                self.rect(x, y + 1, 11, 9, color)
            elif kind == "diamond":
                self.diamond(x + 8, y + 5.5, 4.0, cls="key")
            else:
                self.line(x, y + 5.5, x + 16, y + 5.5, color, 1.6,
                          "5 3" if kind == "dash" else "")
            self.text(x + 21, y + 9, label, anchor="start", size=SMALL)
            y += 15

    def svg(self, chart_id: str, title: str = "", extra: str = "") -> str:
        # A chart too wide for half a page (many bars) takes the whole row (CSS).
        kind = "chart wide" if self.width > WIDE else "chart"
        head = (f'<svg id="{esc(chart_id)}" class="{kind}" viewBox="0 0 {num(self.width)} '
                f'{num(self.height)}" width="{num(self.width)}" height="{num(self.height)}" '
                f'role="img" font-family="system-ui, sans-serif"{extra}>')
        label = f"<title>{esc(title)}</title>" if title else ""
        return head + label + "".join(self.parts) + "</svg>"


def y_scale(canvas: Canvas, values: Iterable[float | None], *, zero: bool = True
            ) -> tuple[Scale, list[float]]:
    """The value axis of ``canvas`` over every value drawn, extended to round ticks."""
    lo, hi = domain(values, zero=zero)
    marks = ticks(lo, hi, max(3, min(6, int((canvas.y0 - canvas.y1) / 45))))
    return Scale(marks[0], marks[-1], canvas.y0, canvas.y1), marks


def left_margin(marks: Sequence[float]) -> float:
    widest = max(text_width(t, SMALL) for t in tick_texts(marks))
    return 26.0 + widest + 6.0
