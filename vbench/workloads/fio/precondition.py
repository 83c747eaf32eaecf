"""SNIA PTS workload-independent preconditioning (``precondition:`` of the fio params):
the named target written whole ``passes`` times in ``bs`` blocks before the run's first
trial (point 1, trial 1), not measured — the PTS writes twice the capacity in 128 KiB
sequential writes before its first round."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from vbench.config.types import Strict

if TYPE_CHECKING:
    from vbench.workloads.fio.jobs import FioParams

JOB = "precondition.fio"
RESULT = "precondition.json"
LOG = "precondition.log"


class Precondition(Strict):
    """Workload-independent preconditioning of the named target (SNIA PTS)."""

    rw: Literal["write", "randwrite"] = Field("write", description="write or randwrite")
    bs: str = Field("128k", description="block size (PTS: 128k sequential)")
    passes: int = Field(2, ge=1, le=10, description="times the whole target is written "
                        "(PTS: twice its capacity)")

    @field_validator("bs", mode="before")
    @classmethod
    def _bs(cls, v: Any) -> Any:
        from vbench.workloads.fio.jobs import _size_field

        return _size_field(v, allow_percent=False)


def applies(params: FioParams, point: int, trial: int) -> bool:
    """Precondition before this trial: the run's first (point 1, trial 1)."""
    return params.precondition is not None and point == 0 and trial == 1


def render(params: FioParams, filename: str, *, header: str = "") -> str:
    """The preconditioning job of ``params.precondition`` over ``filename``."""
    from vbench.workloads.fio import jobs

    pc = params.precondition
    assert pc is not None
    jobs.check_value(filename, "filename")
    return jobs._render(
        "precondition.fio.j2",
        header=header,
        ioengine=params.ioengine,
        direct="1" if params.direct else "0",
        filename=filename,
        size=jobs.target_size(params, own_file=False),
        rw=pc.rw,
        bs=pc.bs,
        loops=pc.passes,
        iodepth=jobs.PREPARE_IODEPTH,
    )
