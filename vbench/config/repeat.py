"""``repeat: {min, max, target}`` (adaptive repetitions) and the run's ``budget:``.

A plain ``repeat: N`` stays a fixed count. The rule itself lives in
vbench/analysis/adaptive.py; these are the scenario's models.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Field, Tag, model_validator

from vbench.config.types import Duration, Share, Strict, new_list


class RepeatTarget(Strict):
    """When a point has trials enough."""

    ci_half_width: Share = Field(
        description="half-width of the 95 % confidence interval of the mean, relative to the "
        "mean, that every target metric must reach (e.g. 5%)",
    )


class AdaptiveRepeat(Strict):
    """``repeat`` as a range: min trials, then more while a target is not met, up to max."""

    # At least 3: a spread judged from two values makes the stop a coin toss (and the
    # t quantile of one degree of freedom, 12.7, a target hardly any point meets).
    min: int = Field(3, ge=3, le=1000, description="trials every point runs before the first "
                     "look (at least 3)")
    max: int = Field(12, ge=3, le=1000, description="most trials a point may take")
    target: RepeatTarget = Field(description="the confidence target")
    metrics: list[str] = Field(
        default_factory=new_list,
        description="metrics held to the target (default: the headline metrics)",
    )
    require: bool = Field(
        False, description="a point that misses the target fails the run (exit 1)"
    )

    @model_validator(mode="after")
    def _range(self) -> AdaptiveRepeat:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        return self


class Budget(Strict):
    """The most an adaptive ``repeat`` may spend in one run, every trial counted.

    Each point's minimum counts too, and so do a resumed run's earlier trials. The
    minimum always runs, so what a budget cuts is the trials added after it: a budget
    below min × points adds none (the plan warns)."""

    trials: int | None = Field(None, ge=1, le=1_000_000, description="most trials in the run, "
                               "every trial counted (the minimum always runs)")
    time: Duration | None = Field(
        None, gt=0, description="most time the trials may take (the run stops adding trials "
        "once it is spent)",
    )

    @model_validator(mode="after")
    def _some(self) -> Budget:
        if self.trials is None and self.time is None:
            raise ValueError("give trials, time or both")
        return self


def _repeat_kind(value: Any) -> str:
    """A mapping is an adaptive repeat, anything else a count: one branch is checked, so
    ``repeat: zero`` says "expected a whole number" and no more. (Capitalised tags are
    left out of error paths by config/load.py.)"""
    return "AdaptiveRepeat" if isinstance(value, dict | AdaptiveRepeat) else "Count"


Repeat = Annotated[
    Annotated[int, Field(ge=1, le=1000), Tag("Count")]
    | Annotated[AdaptiveRepeat, Tag("AdaptiveRepeat")],
    Discriminator(_repeat_kind),
]


def first_trials(repeat: Repeat) -> int:
    """The trials every point runs for sure: the count, or the adaptive minimum."""
    return repeat if isinstance(repeat, int) else repeat.min


def most_trials(repeat: Repeat) -> int:
    """The most trials a point may take: the count, or the adaptive maximum."""
    return repeat if isinstance(repeat, int) else repeat.max
