"""Parameters of the ``faban`` driver and the command line they make (pure).

User documentation: ``drivers/faban/README.md``; keep the two in step.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from vbench.templates import has_control
from vbench.workloads.base import Params

# The only substitutions vbench makes in the user's command; every value is a path vbench
# itself chose, and the command is an argv list quoted item by item (no shell).
PLACEHOLDERS = ("{run_config}", "{output_dir}")
_BRACED = re.compile(r"\{[^{}]*\}")


class FabanParams(Params):
    command: list[str] = Field(min_length=1, description=(
        "the user's Faban driver command as an argv list, run in every `clients` guest; "
        "items may hold {run_config} (the guest path of the run configuration vbench wrote) "
        "and {output_dir} (the trial's output folder in the guest)"))
    run_config: str | None = Field(None, description=(
        "controller path of the benchmark's run.xml (absolute, or relative to the folder "
        "vbench runs in); vbench writes the phases, `users` and the output folder into a copy "
        "for each trial and client guest"))
    users: int | None = Field(None, ge=1, le=1_000_000, description=(
        "Faban's scale (`fa:scale`: simulated users per driver) written into the run "
        "configuration; default: the file's own"))
    set_phases: bool = Field(True, description=(
        "write the scenario's warmup/steady/cooldown into `fa:runControl` (rampUp, "
        "steadyState, rampDown, in seconds); false keeps the file's own"))
    grace: float = Field(300.0, gt=0, le=86_400, description=(
        "seconds the command may take beyond ramp-up + steady state + ramp-down (start-up of "
        "the JVM and agents, the report) before the trial fails"))

    @field_validator("command")
    @classmethod
    def _command(cls, v: list[str]) -> list[str]:
        for item in v:
            if not item or has_control(item):
                raise ValueError(f"{item!r}: empty or holds control characters")
            unknown = [m for m in _BRACED.findall(item) if m not in PLACEHOLDERS]
            if unknown:
                raise ValueError(f"{item!r}: unknown placeholder {unknown[0]} "
                                 f"(known: {', '.join(PLACEHOLDERS)})")
        return v

    @field_validator("run_config")
    @classmethod
    def _run_config(cls, v: str | None) -> str | None:
        if v is not None and (not v or has_control(v)):
            raise ValueError("must be a path without control characters")
        return v

    @model_validator(mode="after")
    def _needs_config(self) -> FabanParams:
        if self.run_config is None and any("{run_config}" in a for a in self.command):
            raise ValueError("the command names {run_config}: set run_config")
        if self.run_config is None and self.users is not None:
            raise ValueError("users is written into the run configuration: set run_config")
        return self


def driver_argv(params: FabanParams, run_config: str | None, output_dir: str) -> list[str]:
    """The command with its placeholders filled in, item by item."""
    out = []
    for item in params.command:
        if run_config is not None:
            item = item.replace("{run_config}", run_config)
        out.append(item.replace("{output_dir}", output_dir))
    return out
