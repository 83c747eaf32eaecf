"""``steady_state:`` — rounds until the SNIA PTS steady-state rule holds.

The rule itself is vbench/analysis/steady_state.py (``rule_of``); this is the scenario's
model.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from vbench.config.types import Share, Strict

# The SNIA PTS's figures (vbench/analysis/steady_state.py applies them).
PTS_WINDOW = 5
PTS_EXCURSION = 0.20
PTS_SLOPE = 0.10
PTS_MAX_ROUNDS = 25


class SteadyStateSpec(Strict):
    """Rounds of every point until the last ``window`` rounds are steady (SNIA PTS).

    A round is one trial of every point, in order: the PTS's round runs its whole test
    matrix once."""

    metric: str = Field(description="the figure each round is judged by, e.g. total_iops")
    window: int = Field(PTS_WINDOW, ge=2, le=100, description="rounds in the measurement "
                        "window (SNIA PTS: 5)")
    max_excursion: Share = Field(PTS_EXCURSION, description="the window's range (highest "
                                 "round minus lowest) may be at most this share of the "
                                 "window's mean (SNIA PTS data excursion: 20%)")
    max_slope: Share = Field(PTS_SLOPE, description="the least-squares line may change by at "
                             "most this share of the mean across the window (SNIA PTS: 10%)")
    max_rounds: int = Field(PTS_MAX_ROUNDS, ge=2, le=1000, description="the cap: a point "
                            "that is not steady after this many rounds stops there, "
                            "'steady state not reached' (SNIA PTS: commonly 25)")
    at: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="the point(s) whose rounds decide, by factor "
        "levels (e.g. {bs: 4k, rw: randwrite}, as the PTS tracks 4 KiB writes); default: "
        "every point must be steady",
    )

    @model_validator(mode="after")
    def _cap(self) -> SteadyStateSpec:
        if self.max_rounds < self.window:
            raise ValueError(f"max_rounds ({self.max_rounds}) must be at least the window "
                             f"({self.window})")
        return self
