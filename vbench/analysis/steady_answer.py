"""The answer of a steady-state study (``steady_state:``): per deciding point, the round
its measurement window became steady (or that it never did), and the figure the SNIA
PTS reports — the mean over the steady window's rounds, not over every round."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vbench.analysis.stats import summarize
from vbench.analysis.steady_state import SteadyRule, SteadyState, judge, rounds_of, rule_of
from vbench.analysis.verdict import ANSWERED, NO_ANSWER, Answer, Fact, Figure

if TYPE_CHECKING:
    from vbench.analysis.verdict_build import AnswerInputs

HOW_TO_READ = (
    "Rounds of the same measurement ran until the last {w} agreed (SNIA PTS): their range "
    "(highest minus lowest round) at most {e:.0f} % of the window's mean, and the line "
    "fitted through them changing by at most {s:.0f} % of it across the window. The figure "
    "is the window's mean."
)


def point_states(inputs: AnswerInputs, rule: SteadyRule) -> dict[int, SteadyState]:
    """Each point's stored rounds as the rule reads them (a round: a trial, in order;
    an interrupted trial measured nothing and is no round)."""
    f = inputs.analysis.figures
    counts: dict[int, int] = {}
    for t in inputs.trials:
        if t.get("status") != "interrupted":
            p = int(t["point"])
            counts[p] = max(counts.get(p, 0), int(t["trial"]))
    return {p: judge(rounds_of(f.trial_values(p, rule.metric), n), rule)
            for p, n in sorted(counts.items())}


def _figure(inputs: AnswerInputs, point: int, state: SteadyState) -> Figure:
    base = inputs.figure(point, state.rule.metric)
    w = state.window
    if not state.reached or w is None:
        return base
    values = [v for v in state.rounds[w.first - 1:w.last] if v is not None]
    s = summarize(values, cv_threshold=inputs.stored.scenario.cv_threshold)
    return Figure(base.metric, s.mean, base.unit, s.n, s.ci_low, s.ci_high,
                  f"steady-state window, rounds {w.first}–{w.last}", base.where,
                  base.direction, None, base.simulated, s.noisy)


def _short(text: str) -> str:
    """The rule's sentence under the answer's title "steady state" (not said twice)."""
    return text.removeprefix("steady state ")


def steady_answers(inputs: AnswerInputs) -> tuple[Answer, ...]:
    rule = rule_of((inputs.run.get("scenario") or {}).get("steady_state"))
    if rule is None:
        return ()
    f = inputs.analysis.figures
    states = {p: s for p, s in point_states(inputs, rule).items()
              if rule.decides(f.points.get(p, {}))}
    if not states:
        return (Answer("steady state", "steady state", "no round ran at a deciding point",
                       NO_ANSWER),)
    reached = [p for p, s in states.items() if s.reached]
    many = len(states) > 1
    details = tuple(f"{f.title(p)}: {s.text()}" for p, s in states.items()) if many else ()
    if len(reached) == len(states):
        rounds = max(s.at_round or 0 for s in states.values())
        text = (f"every deciding point steady by round {rounds}" if many
                else _short(next(iter(states.values())).text()))
        status, ok = ANSWERED, True
    else:
        missing = len(states) - len(reached)
        text = (f"not reached at {missing} of {len(states)} points" if many
                else _short(next(iter(states.values())).text()))
        status, ok = "not reached", False
    how = HOW_TO_READ.format(w=rule.window, e=rule.max_excursion * 100,
                             s=rule.max_slope * 100)
    facts = tuple(Fact(f.title(p), "round " + str(s.at_round) if s.reached else "not reached")
                  for p, s in states.items())
    figures = tuple(_figure(inputs, p, s) for p, s in states.items())
    return (Answer("steady state", "steady state", text, status, facts=facts,
                   figures=figures, details=details, how_to_read=how, ok=ok),)
