"""Consolidation tiles read from a stored run: each workload's QoS per tile, which tiles
pass, and the score (docs/consolidation.md).

- A workload's criteria (``workloads.<name>.qos``) are checked per tile on its own
  figures (``<name>.<metric>``, label ``tile``), with one more per workload: it ran to
  the end of every trial (``<name>.ok``, min over trials ≥ 1). A tile passes at a point
  when every check of that tile passes.
- Score, VMmark-style: per workload, its score metric (default: its first headline
  metric) normalised to a reference (``reference:``, else its mean in tile 1 of this
  run's one-tile point); a tile's score is the geometric mean of its workloads'
  normalised figures; the run's score at a point is the sum over its passing tiles.
  Both are computed per trial and reported as mean with a 95 % CI over the trials.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.analysis.qos import MISSING, criterion_name
from vbench.analysis.stats import Summary, summarize
from vbench.analysis.verdict import ANSWERED, NO_ANSWER, Answer, Fact
from vbench.config.scenario import QosCriterion
from vbench.config.tiles import OK_METRIC, TILE_LABEL, TILES_LABEL, most_tiles

if TYPE_CHECKING:
    from vbench.analysis.verdict_build import AnswerInputs


def tile_criteria(doc: Mapping[str, Any]) -> tuple[list[QosCriterion], list[str]]:
    """Every workload's criteria as run-level ones: metric ``<name>.<metric>``, one check
    per tile (``where: {tile: [...]}``) when the bundle is tiled; and ``<name> ran``."""
    tiled = doc.get("tiles") is not None
    tiles = [str(t) for t in range(1, most_tiles(doc) + 1)]
    out: list[QosCriterion] = []
    problems: list[str] = []
    for name, spec in (doc.get("workloads") or {}).items():
        raws = [{"name": f"{name} ran", "metric": OK_METRIC, "stat": "min", "op": ">=",
                 "threshold": 1}, *((spec or {}).get("qos") or [])]
        for i, raw in enumerate(raws):
            try:
                c = QosCriterion.model_validate(raw)
            except ValueError as exc:
                problems.append(f"workloads.{name}.qos[{i - 1}] ignored: {exc}".splitlines()[0])
                continue
            where = {**c.where, **({TILE_LABEL: tiles} if tiled else {})}
            label = c.name or f"{name}: {criterion_name(c)}"
            out.append(c.model_copy(update={"name": label, "metric": f"{name}.{c.metric}",
                                            "where": where}))
    return out, problems


@dataclass(frozen=True)
class TilePoint:
    """The tiles of one stored point."""

    point: int
    title: str
    tiles: int
    passing: tuple[int, ...]
    failing: Mapping[int, tuple[str, ...]]  # tile -> the criteria it failed
    tile_scores: Mapping[int, Summary]  # tile -> its score over trials
    score: Summary | None  # the sum over passing tiles, over trials; None: no reference
    measured: bool = True  # False: no check has data (the point's trials never finished)


def tile_points(inputs: AnswerInputs) -> list[TilePoint]:
    doc = inputs.run.get("scenario") or {}
    workloads = list(doc.get("workloads") or {})
    refs = _references(inputs, doc, workloads)
    out = []
    for p in sorted(inputs.analysis.figures.points):
        labels = inputs.analysis.figures.points[p]
        count = int(labels.get(TILES_LABEL, "1"))
        failing: dict[int, list[str]] = {t: [] for t in range(1, count + 1)}
        for c in inputs.analysis.qos.checks:
            if c.point == p and not c.passed:
                # A check of no one tile (a run-level criterion on the mean tile) fails
                # every tile of the point: it is no more tile 1's than another's.
                tile = c.subject.get(TILE_LABEL)
                for t in [int(tile)] if tile is not None else list(failing):
                    failing.setdefault(t, []).append(c.criterion)
        passing = tuple(t for t, why in failing.items() if not why)
        measured = any(c.point == p and c.status != MISSING for c in inputs.analysis.qos.checks)
        per_trial = _tile_trial_scores(inputs, p, count, workloads, refs)
        tile_scores = {t: summarize(list(v.values())) for t, v in per_trial.items()}
        score = None
        if refs is not None:
            trials = sorted({tr for v in per_trial.values() for tr in v})
            score = summarize([math.fsum(per_trial[t].get(tr, 0.0) for t in passing)
                               for tr in trials])
        out.append(TilePoint(p, inputs.point_title(p), count, passing,
                             {t: tuple(w) for t, w in failing.items() if w}, tile_scores,
                             score, measured))
    return out


def _score_metric(inputs: AnswerInputs, doc: Mapping[str, Any], name: str) -> str | None:
    spec = (doc.get("workloads") or {}).get(name) or {}
    if spec.get("score"):
        return f"{name}.{spec['score']}"
    return next((h for h in inputs.headline if h.startswith(f"{name}.")), None)


def _references(inputs: AnswerInputs, doc: Mapping[str, Any], workloads: Sequence[str]
                ) -> dict[str, tuple[str, float]] | None:
    """Workload -> (score metric, reference value); None when one has no reference."""
    figures = inputs.analysis.figures
    one = [p for p in sorted(figures.points) if figures.points[p].get(TILES_LABEL, "1") == "1"]
    out: dict[str, tuple[str, float]] = {}
    for name in workloads:
        metric = _score_metric(inputs, doc, name)
        if metric is None:
            return None
        given = ((doc.get("workloads") or {}).get(name) or {}).get("reference")
        if given:
            out[name] = (metric, float(given))
            continue
        values = [v for p in one for v in _tile_values(inputs, p, metric, 1).values()]
        if not values or not math.fsum(values):
            return None
        out[name] = (metric, math.fsum(values) / len(values))
    return out


def _tile_values(inputs: AnswerInputs, point: int, metric: str, tile: int
                 ) -> dict[int, float]:
    doc = inputs.run.get("scenario") or {}
    where = {TILE_LABEL: str(tile)} if doc.get("tiles") is not None else {}
    got = inputs.analysis.figures.labelled(point, metric, where)
    return {t: v for t, v in got.items() if v is not None and math.isfinite(v)}


def _tile_trial_scores(inputs: AnswerInputs, point: int, count: int,
                       workloads: Sequence[str], refs: Mapping[str, tuple[str, float]] | None
                       ) -> dict[int, dict[int, float]]:
    """Tile -> trial -> the geometric mean of its workloads' normalised figures (a trial
    missing one workload's figure has no score for that tile)."""
    out: dict[int, dict[int, float]] = {t: {} for t in range(1, count + 1)}
    if refs is None:
        return out
    for tile in out:
        logs: dict[int, list[float]] = {}
        for name in workloads:
            metric, ref = refs[name]
            lower = inputs.direction(metric) == "lower"
            for trial, value in _tile_values(inputs, point, metric, tile).items():
                ratio = (ref / value if lower else value / ref) if value > 0 else 0.0
                logs.setdefault(trial, []).append(math.log(ratio) if ratio > 0 else -math.inf)
        out[tile] = {tr: math.exp(math.fsum(v) / len(v)) for tr, v in logs.items()
                     if len(v) == len(workloads)}
    return out


def _score_text(s: Summary | None) -> str:
    if s is None or s.mean is None:
        return "no score"
    half = s.ci_half
    return f"{s.mean:.2f}" + (f" ± {half:.2f}" if half is not None else "") + \
        f" (n={s.n})"


def tiles_answer(inputs: AnswerInputs) -> tuple[Answer, ...]:
    """The consolidation answer: the most tiles that pass, and the score there; without
    ``tiles:``, at which points every workload passes (no score)."""
    points = tile_points(inputs)
    if not points:
        return ()
    if (inputs.run.get("scenario") or {}).get("tiles") is None:
        return (_workloads_answer(points),)
    # VMmark's rule: a result counts when every tile of it passes; a point where some fail
    # answers only when no point passes whole (3 of 4 is not a 4-tile result, nor 3).
    best = max(points, key=lambda t: (t.measured and len(t.passing) == t.tiles,
                                      len(t.passing),
                                      t.score.mean if t.score and t.score.mean else 0.0))
    if not best.passing:
        why = "; ".join(f"tile {t}: {', '.join(c)}" for t, c in
                        sorted(best.failing.items())[:3])
        return (Answer("tiles", "Consolidation", f"no tile passes ({why})", NO_ANSWER,
                       facts=_facts(points), details=_details(points), ok=False),)
    text = (f"{len(best.passing)} of {best.tiles} tiles pass at {best.title}; "
            f"score {_score_text(best.score)}")
    # The headline figures at the answer's point (the default headline's point is the one
    # with the best first figure: one tile, where each tile has the cluster to itself).
    figures = tuple(inputs.figure(best.point, m) for m in inputs.headline)
    return (Answer("tiles", "Consolidation", text, ANSWERED, facts=_facts(points),
                   figures=figures, details=_details(points),
                   ok=len(best.passing) == best.tiles,
                   how_to_read="A tile passes when every workload of it meets its QoS; the "
                   "score sums the passing tiles' scores (geometric mean of each workload's "
                   "throughput relative to its reference)."),)


def _facts(points: Sequence[TilePoint]) -> tuple[Fact, ...]:
    """Per point, the passing tiles and the score as numbers (JSON; `vbench compare`
    puts two runs' side by side)."""
    out = []
    for t in points:
        if not t.measured:
            continue
        out.append(Fact(f"passing tiles at {t.title}", f"{len(t.passing)} of {t.tiles}",
                        float(len(t.passing))))
        if t.score is not None and t.score.mean is not None:
            out.append(Fact(f"score at {t.title}", _score_text(t.score), t.score.mean))
    return tuple(out)


def _details(points: Sequence[TilePoint]) -> tuple[str, ...]:
    out = []
    for t in points:
        if not t.measured:
            out.append(f"{t.title}: not measured (no trial of it finished)")
            continue
        scores = ", ".join(f"tile {i}: {_score_text(s)}" for i, s in sorted(t.tile_scores.items()))
        failing = "; ".join(f"tile {i} fails {', '.join(c)}" for i, c in sorted(t.failing.items()))
        out.append(f"{t.title}: {len(t.passing)} of {t.tiles} tiles pass, score "
                   f"{_score_text(t.score)}" + (f" [{scores}]" if scores else "")
                   + (f"; {failing}" if failing else ""))
    return tuple(out)


def _workloads_answer(points: Sequence[TilePoint]) -> Answer:
    """Several workloads without tiles: the points where every workload meets its QoS
    (a noisy-neighbour study: the aggressor levels its victims bear)."""
    good = [t for t in points if t.passing]
    text = (f"every workload passes its QoS at {len(good)} of {len(points)} point"
            f"{'s' if len(points) != 1 else ''}")
    if good and len(good) < len(points):
        text += f" ({', '.join(t.title for t in good)})"
    details = tuple(f"{t.title}: fails {', '.join(t.failing.get(1, ()))}" if t.measured
                    else f"{t.title}: not measured (no trial of it finished)"
                    for t in points if not t.passing)
    return Answer("workloads", "Workloads", text, ANSWERED if good else NO_ANSWER,
                  details=details, ok=len(good) == len(points),
                  how_to_read="Each workload's QoS is checked at every point, with one more "
                  "criterion per workload: it ran to the end of every trial.")
