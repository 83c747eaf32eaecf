"""The find-max block of a scenario (``search:``): which numeric factor is searched,
between which bounds, how a level passes, and when the search stops. Kept apart from
:mod:`vbench.config.scenario` because only find-max code reads it; its bounds may be
sizes (``4k``..``1m``), written back as such."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PrivateAttr, field_serializer, model_validator

from vbench.config.levels import is_size, search_level, size_text
from vbench.config.types import NAME, Duration, Strict, new_list


class SearchStop(Strict):
    """When a find-max search stops (whichever comes first)."""

    gap: float = Field(
        1.0, gt=0, lt=100,
        description="percent: stop once lowest fail − highest pass ≤ gap % of the lowest fail",
    )
    max_levels: int | None = Field(None, ge=2, le=1000, description="most distinct levels run")
    max_time: Duration | None = Field(None, gt=0, description="most time one search may take")


# A search bound: a number, or a size with a binary unit (4k, 1m) as the drivers take it.
SearchLevel = Annotated[float, BeforeValidator(search_level)]


class SearchSpec(Strict):
    """A find-max search: the largest level of one numeric factor passing every criterion."""

    factor: str = Field(pattern=NAME, description="name of the searched factor (label in reports)")
    path: str | None = Field(
        None,
        description="dotted path each level is written to (default: workload.params.<factor>; "
        "topology.<group>.count searches a group's size)",
    )
    also: list[str] = Field(
        default_factory=new_list,
        description="further dotted paths set to the same level (e.g. a driver's instance "
        "count that follows a group's size)",
    )
    min: SearchLevel = Field(allow_inf_nan=False, description="lowest level searched (a "
                             "number, or a size: 4k, 1m — levels are then written as sizes)")
    max: SearchLevel = Field(allow_inf_nan=False, description="highest level searched")
    start: SearchLevel | None = Field(None, allow_inf_nan=False,
                                      description="first level run (default: min)")
    step: SearchLevel | None = Field(
        None, gt=0, allow_inf_nan=False,
        description="first step of the ramp, doubled after every pass "
        "(default: (max − min) / 8)",
    )
    # The bounds were written as sizes (bs: 4k..1m): levels go to the driver as sizes.
    _sizes: bool = PrivateAttr(default=False)
    integer: bool | None = Field(
        None, description="levels are whole numbers (default: when min, max, start and step are)"
    )
    trials: int | None = Field(None, ge=1, le=100, description="trials per level (default: repeat)")
    criteria: list[str] = Field(
        default_factory=new_list,
        description="names of the qos criteria that decide pass/fail (default: all of them)",
    )
    max_failure_rate: float = Field(
        0.0, ge=0, le=1, description="fraction of a level's trials that may fail (status) and "
        "the level still pass",
    )
    noisy_retries: int = Field(
        2, ge=0, le=20, description="a level whose trials disagree runs `trials` more, this "
        "many times at most, then is decided over all its trials and reported noisy",
    )
    verify_trials: int = Field(
        2, ge=0, le=100, description="trials added to the highest pass and the lowest fail "
        "before the answer is given (0: no verification)",
    )
    stop: SearchStop = Field(default_factory=SearchStop, description="stopping rule")

    @model_validator(mode="wrap")
    @classmethod
    def _in_sizes(cls, data: Any, handler: Any) -> SearchSpec:
        spec = handler(data)
        if isinstance(data, dict) and any(is_size(data.get(k))
                                          for k in ("min", "max", "start", "step")):
            spec._sizes = True
        return spec._bounds()  # after _sizes: its messages print sizes as written

    @property
    def sizes(self) -> bool:
        """Whether the levels are sizes (bounds written 4k, 1m…)."""
        return self._sizes

    @field_serializer("min", "max", "start", "step")
    def _as_written(self, value: float | None) -> float | str | None:
        # Stored with the run as written (4k), so that its report reads sizes back.
        return size_text(round(value)) if self._sizes and value is not None else value

    def _text(self, value: float) -> str:
        return size_text(round(value)) if self._sizes else f"{value:g}"

    def _bounds(self) -> SearchSpec:
        if self.min >= self.max:
            raise ValueError(f"min ({self._text(self.min)}) must be below max "
                             f"({self._text(self.max)})")
        if self.start is not None and not self.min <= self.start <= self.max:
            raise ValueError(f"start ({self._text(self.start)}) must lie within min..max")
        if self.integer is None:
            values = [self.min, self.max, self.start, self.step]
            self.integer = all(v is None or float(v).is_integer() for v in values)
        return self
