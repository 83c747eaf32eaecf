"""Faban ``summary.xml`` → one record per driver and per operation (pure, no I/O).

The document (``MasterImpl`` + ``Metrics.printSummary``) holds a ``benchSummary``
(metric, passed) and one ``driverSummary`` per driver: ``mix`` (successes, failures,
achieved and required mix, passed), ``responseTimes`` (avg, max, sd, percentiles with
their limits — ``<percentile nth=… limit=…>`` in recent Faban, ``<p90th>`` in old
versions), ``delayTimes`` (think or cycle time targeted vs actual) and ``customStats``.
Response times are converted to milliseconds whatever unit the file declares.

Faban can print ``passed=true`` for a run that measured nothing (every thread failed to
start, a steady state of zero length): :attr:`FabanDriver.verdict` treats zero
operations as a failure with that reason, whatever the file says.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from vbench.errors import ParseError

_DOC = re.compile(r"<benchResults\b.*?</benchResults>", re.S)
# Seconds per unit, for the unit attribute of <responseTimes>.
_UNIT_MS = {"seconds": 1000.0, "sec": 1000.0, "milliseconds": 1.0, "ms": 1.0,
            "microseconds": 0.001, "us": 0.001}  # fmt: skip


@dataclass(frozen=True)
class Percentile:
    nth: str  # "90", "99.9" as printed
    value_ms: float | None
    limit_ms: float | None = None


@dataclass(frozen=True)
class FabanOperation:
    """One operation of one driver: mix, response times, think/cycle time."""

    name: str
    successes: int | None = None
    failures: int | None = None
    mix: float | None = None  # achieved fraction of all operations (0..1)
    required_mix: float | None = None
    mix_passed: bool | None = None
    avg_ms: float | None = None
    max_ms: float | None = None
    sd_ms: float | None = None
    percentiles: tuple[Percentile, ...] = ()
    rt_passed: bool | None = None
    delay_type: str | None = None  # "thinkTime" | "cycleTime"
    delay_targeted_s: float | None = None
    delay_actual_s: float | None = None
    delay_passed: bool | None = None

    def percentile(self, nth: str) -> Percentile | None:
        return next((p for p in self.percentiles if _same_nth(p.nth, nth)), None)

    def throughput(self, seconds: float | None) -> float | None:
        """Successful operations per second over a steady state of ``seconds``."""
        if self.successes is None or not seconds:
            return None
        return self.successes / seconds


@dataclass(frozen=True)
class FabanDriver:
    name: str
    metric: float | None
    metric_unit: str | None
    total_ops: int | None
    users: int | None
    passed: bool | None
    start: str | None
    end: str | None
    mix_allowed_deviation: float | None
    operations: tuple[FabanOperation, ...]
    # (description, result, passed) per custom stat
    custom_stats: tuple[tuple[str, str | None, bool | None], ...] = ()

    def operation(self, name: str) -> FabanOperation | None:
        return next((o for o in self.operations if o.name == name), None)

    @property
    def verdict(self) -> tuple[bool, str | None]:
        """(passed, why not): zero operations fail even when the file says passed."""
        if not self.total_ops:
            says = _txt(self.passed)
            return False, f"driver {self.name}: zero operations measured (file says passed={says})"
        if self.passed is False:
            return False, f"driver {self.name}: {', '.join(self.failed_criteria()) or 'failed'}"
        return True, None

    def failed_criteria(self) -> list[str]:
        out = []
        for op in self.operations:
            if op.mix_passed is False:
                out.append(f"{op.name} mix {_pct(op.mix)} vs {_pct(op.required_mix)}")
            if op.rt_passed is False:
                out.append(f"{op.name} response time")
            if op.delay_passed is False:
                out.append(f"{op.name} {op.delay_type or 'delay'}")
        out.extend(f"custom stat: {d}" for d, _r, p in self.custom_stats if p is False)
        return out


@dataclass(frozen=True)
class FabanSummary:
    benchmark: str | None
    run_id: str | None
    start: str | None
    end: str | None
    metric: float | None
    metric_unit: str | None
    passed: bool | None
    drivers: tuple[FabanDriver, ...] = field(default_factory=tuple)

    @property
    def verdict(self) -> tuple[bool, str | None]:
        """The run passes when every driver does (each with ops measured) and the file agrees."""
        if not self.drivers:
            return False, "no driverSummary in the file"
        for d in self.drivers:
            ok, why = d.verdict
            if not ok:
                return False, why
        if self.passed is False:
            return False, "benchSummary says passed=false"
        return True, None


def parse_summary(text: str, source: str = "<text>") -> FabanSummary:
    """``summary.xml``, or a console log that prints it inline (the last one wins)."""
    docs = _DOC.findall(text)
    if not docs:
        raise ParseError(f"{source}: no <benchResults> document (not a Faban summary.xml?)")
    try:
        root = ET.fromstring(docs[-1])
    except ET.ParseError as exc:
        raise ParseError(f"{source}: malformed summary XML: {exc}") from None
    bench = root.find("benchSummary")
    drivers = tuple(_driver(d, source) for d in root.findall("driverSummary"))
    return FabanSummary(
        benchmark=bench.get("name") if bench is not None else None,
        run_id=_text(bench, "runId"),
        start=_text(bench, "startTime"),
        end=_text(bench, "endTime"),
        metric=_float(bench, "metric", source),
        metric_unit=_attr(bench, "metric", "unit"),
        passed=_bool(bench, "passed"),
        drivers=drivers,
    )


def _driver(el: ET.Element, source: str) -> FabanDriver:
    ops: dict[str, dict[str, object]] = {}

    def slot(name: str) -> dict[str, object]:
        return ops.setdefault(name, {"name": name})

    mix = el.find("mix")
    for op in mix.findall("operation") if mix is not None else ():
        s = slot(op.get("name", "?"))
        s.update(successes=_int(op, "successes", source), failures=_int(op, "failures", source),
                 mix=_float(op, "mix", source), required_mix=_float(op, "requiredMix", source),
                 mix_passed=_bool(op, "passed"))  # fmt: skip
    rts = el.find("responseTimes")
    scale = _scale(rts, source)
    for op in rts.findall("operation") if rts is not None else ():
        s = slot(op.get("name", "?"))
        s.update(avg_ms=_ms(_float(op, "avg", source), scale),
                 max_ms=_ms(_float(op, "max", source), scale),
                 sd_ms=_ms(_float(op, "sd", source), scale),
                 percentiles=_percentiles(op, scale, source),
                 rt_passed=_bool(op, "passed"))  # fmt: skip
    delays = el.find("delayTimes")
    for op in delays.findall("operation") if delays is not None else ():
        s = slot(op.get("name", "?"))
        s.update(delay_type=op.get("type"), delay_targeted_s=_float(op, "targetedAvg", source),
                 delay_actual_s=_float(op, "actualAvg", source),
                 delay_passed=_bool(op, "passed"))  # fmt: skip
    stats = tuple(
        (_text(st, "description") or "?", _text(st, "result"), _bool(st, "passed"))
        for cs in el.findall("customStats")
        for st in cs.findall("stat")
    )
    dev = _attr(el, "mix", "allowedDeviation")
    return FabanDriver(
        name=el.get("name", "?"),
        metric=_float(el, "metric", source),
        metric_unit=_attr(el, "metric", "unit"),
        total_ops=_int(el, "totalOps", source),
        users=_int(el, "users", source),
        passed=_bool(el, "passed"),
        start=_text(el, "startTime"),
        end=_text(el, "endTime"),
        mix_allowed_deviation=_num(dev, source, "mix allowedDeviation"),
        operations=tuple(FabanOperation(**o) for o in ops.values()),  # type: ignore[arg-type]
        custom_stats=stats,
    )


def _percentiles(op: ET.Element, scale: float, source: str) -> tuple[Percentile, ...]:
    out = [
        Percentile(p.get("nth", "?"), _ms(_num(p.text, source, "percentile"), scale),
                   _ms(_num(p.get("limit"), source, "percentile limit"), scale))
        for p in op.findall("percentile")
    ]  # fmt: skip
    # Old Faban: <p90th> (and <p99th>) elements; the limit is the operation's r90th attribute.
    for child in op:
        m = re.fullmatch(r"p(\d+(?:\.\d+)?)th", child.tag)
        if m and not any(_same_nth(p.nth, m.group(1)) for p in out):
            limit = op.get(f"r{m.group(1)}th")
            out.append(Percentile(m.group(1), _ms(_num(child.text, source, child.tag), scale),
                                  _ms(_num(limit, source, "limit"), scale)))  # fmt: skip
    return tuple(out)


def _scale(rts: ET.Element | None, source: str) -> float:
    unit = (rts.get("unit") if rts is not None else None) or "seconds"
    try:
        return _UNIT_MS[unit.strip().lower()]
    except KeyError:
        raise ParseError(f"{source}: unknown responseTimes unit {unit!r}") from None


def _same_nth(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def _ms(value: float | None, scale: float) -> float | None:
    return None if value is None else value * scale


def _text(el: ET.Element | None, tag: str) -> str | None:
    if el is None:
        return None
    child = el.find(tag)
    if child is None or child.text is None or not child.text.strip():
        return None
    return child.text.strip()


def _attr(el: ET.Element | None, tag: str, name: str) -> str | None:
    child = el.find(tag) if el is not None else None
    return child.get(name) if child is not None else None


def _num(raw: str | None, source: str, what: str) -> float | None:
    if raw is None or not raw.strip():
        return None
    try:
        return float(raw)
    except ValueError:
        raise ParseError(f"{source}: {what} is not a number: {raw!r}") from None


def _float(el: ET.Element | None, tag: str, source: str) -> float | None:
    return _num(_text(el, tag), source, tag)


def _int(el: ET.Element | None, tag: str, source: str) -> int | None:
    value = _float(el, tag, source)
    return None if value is None else int(value)


def _bool(el: ET.Element | None, tag: str) -> bool | None:
    raw = _text(el, tag)
    return None if raw is None else raw.lower() == "true"


def _txt(value: bool | None) -> str:
    return "?" if value is None else str(value).lower()


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value * 100:.2f} %"
