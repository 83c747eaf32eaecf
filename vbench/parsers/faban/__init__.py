"""Faban results → per-operation records (pure: text in, records out).

Faban itself cannot run in vbench's test lab; this package imports what a real Faban
run leaves in its output directory: ``summary.xml`` (:mod:`.summary`), ``detail.xan``
(:mod:`.detail`) and ``driver.log`` (:mod:`.driverlog`). :func:`import_run` joins them
into one :class:`FabanOperationFigures` per operation: steady-state throughput,
avg / max / sd / percentiles in ms, achieved vs required mix, pass/fail, and — when the
detail file is there — the standard deviation of the per-interval throughput.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from vbench.errors import ParseError
from vbench.parsers.base import ToolParser, register
from vbench.parsers.faban.detail import FabanDetail, parse_detail
from vbench.parsers.faban.driverlog import FabanDriverLog, parse_driver_log
from vbench.parsers.faban.summary import FabanDriver, FabanSummary, parse_summary

__all__ = [
    "FabanDetail",
    "FabanDriverLog",
    "FabanOperationFigures",
    "FabanRun",
    "FabanSummary",
    "import_run",
    "parse_detail",
    "parse_driver_log",
    "parse_summary",
]


@dataclass(frozen=True)
class FabanOperationFigures:
    driver: str
    operation: str
    throughput: float | None  # successful ops/s over the steady state
    successes: int | None
    failures: int | None
    avg_ms: float | None
    max_ms: float | None
    sd_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    mix: float | None
    required_mix: float | None
    passed: bool | None  # mix, response time and delay criteria as Faban judged them
    interval_sd: float | None = None  # sd of per-interval throughput (ops/s), from detail.xan


@dataclass(frozen=True)
class FabanRun:
    summary: FabanSummary
    steady_seconds: float | None
    operations: tuple[FabanOperationFigures, ...]
    passed: bool
    reason: str | None


def import_run(summary: str, detail: str | None = None, log: str | None = None,
               source: str = "<faban>") -> FabanRun:  # fmt: skip
    """Join a run's files (``detail`` and ``log`` optional) into figures per operation."""
    summ = parse_summary(summary, f"{source}/summary.xml")
    det = parse_detail(detail, f"{source}/detail.xan") if detail is not None else None
    drv = parse_driver_log(log, f"{source}/driver.log") if log is not None else None
    ops = []
    for d in summ.drivers:
        seconds = (drv.steady_seconds if drv else None) or _steady_from_metric(d)
        per_interval = det.series("throughput") if det else {}
        for op in d.operations:
            ops.append(_figures(d, op, seconds, per_interval.get(op.name)))
    passed, reason = summ.verdict
    steady = (drv.steady_seconds if drv else None) or (
        _steady_from_metric(summ.drivers[0]) if summ.drivers else None
    )
    return FabanRun(summ, steady, tuple(ops), passed, reason)


def _figures(d: FabanDriver, op, seconds, series) -> FabanOperationFigures:  # type: ignore[no-untyped-def]
    def pct(nth: str) -> float | None:
        p = op.percentile(nth)
        return p.value_ms if p else None

    verdicts = [v for v in (op.mix_passed, op.rt_passed, op.delay_passed) if v is not None]
    values = [v for _t, v in series or () if v is not None]
    return FabanOperationFigures(
        driver=d.name, operation=op.name, throughput=op.throughput(seconds),
        successes=op.successes, failures=op.failures, avg_ms=op.avg_ms, max_ms=op.max_ms,
        sd_ms=op.sd_ms, p90_ms=pct("90"), p95_ms=pct("95"), p99_ms=pct("99"),
        mix=op.mix, required_mix=op.required_mix,
        passed=all(verdicts) if verdicts else None,
        interval_sd=statistics.stdev(values) if len(values) >= 2 else None,
    )  # fmt: skip


def _steady_from_metric(d: FabanDriver) -> float | None:
    """Faban's metric is steady-state ops / steady-state seconds, so seconds = ops / metric."""
    if not d.total_ops or not d.metric:
        return None
    return d.total_ops / d.metric


def _cli_rows(text: str, source: str) -> list[dict[str, object]]:
    """Whichever Faban file ``text`` is: summary (or a log printing it), detail, driver log."""
    if "<benchResults" in text:
        run = import_run(text, source=source)
        verdict = {"run_passed": run.passed, "run_reason": run.reason}
        return [{**asdict(o), **verdict} for o in run.operations] or [verdict]
    if "Section:" in text:
        det = parse_detail(text, source)
        return [{"section": s.name, **dict(zip(s.columns, row, strict=False))}
                for s in det.sections for row in s.rows]  # fmt: skip
    try:
        log = parse_driver_log(text, source)
    except ParseError:
        raise ParseError(f"{source}: not a Faban summary.xml, detail.xan or driver.log") from None
    return [{"when": r.when.isoformat(), "logger": r.logger, "method": r.method,
             "level": r.level, "message": r.message} for r in log.records]  # fmt: skip


register(ToolParser("faban", "Faban output: summary.xml (or a console log printing it), "
                    "detail.xan or driver.log.", _cli_rows))  # fmt: skip
