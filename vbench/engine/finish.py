"""The end of a `vbench run`: from the stored run to what the person is told.

Once :func:`vbench.engine.session.execute` has ended the run in the store, :func:`finish_run`
reads it back **once** (:meth:`StoredRun.load`), analyses it once (:func:`report_data_of`)
and passes that through a short pipeline of named steps (:data:`FINISH_STEPS`), each a
function ``(store, RunResult) -> RunResult`` that fills a part of the frozen result: the
figures beside the raw outputs, the run's verdict (:mod:`vbench.engine.verdict`), the QoS
and regression verdicts and the exit code they lead to, the HTML report, the ``--json``
document. The CLI only prints the :class:`RunResult`; nothing after this reads or
analyses the run again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.engine.verdict import decide, keep_verdict
from vbench.errors import EXIT_OK, EXIT_QOS
from vbench.results.rundir import RunDir
from vbench.results.stored import StoredRun

if TYPE_CHECKING:
    from vbench.analysis.regression import RegressionResult
    from vbench.engine.runner import RunOutcome
    from vbench.publish import Outcome
    from vbench.report.data import ReportData
    from vbench.results.store import Store


@dataclass(frozen=True)
class FinishOptions:
    """What the person asked of the run's end (the `vbench run` options)."""

    lab: Path  # the lab file, for the --resume hint of an interrupted run
    regression_spec: str | None = None  # --check-regression (None: not asked)
    fail_on_qos: bool = False
    write_report: bool = True
    as_json: bool = False
    width: int | None = None  # columns the verdicts' text fits (None: not cut)


@dataclass(frozen=True)
class Verdicts:
    """The QoS and regression verdicts and the exit code they lead to."""

    text: str  # QoS and regression, as the terminal prints them ("" when neither)
    exit_code: int
    regression: RegressionResult | None
    reason: str = ""  # why it exits 1 (the run's last line says it), else empty


@dataclass(frozen=True)
class RunResult:
    """A finished run, everything its outputs show (filled step by step)."""

    run: StoredRun  # read once from the store
    data: ReportData  # its one analysis (with the regression once checked)
    status: str  # ok | failed | interrupted
    exit_code: int
    rundir: RunDir
    options: FinishOptions
    kept: str = ""  # an interrupted run: what it kept and how to resume it
    show_table: bool = True  # False: interrupted before any trial finished ok
    verdicts: Verdicts | None = None
    report: Path | None = None  # report.html, when written
    doc: dict[str, Any] = field(default_factory=dict)  # --json: the document
    published: tuple[Outcome, ...] = ()  # each publishing target's delivery (lab publish:)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def run_dir(self) -> Path:
        return self.rundir.path

    @property
    def last_line(self) -> str:
        """How the run ended: never "ok" when it exits 1."""
        reason = self.verdicts.reason if self.verdicts is not None else ""
        return f"run {self.run_id}: {reason or self.status} ({self.run_dir})"


Step = Callable[["Store", RunResult], RunResult]


def finish_run(
    store: Store, outcome: RunOutcome, rundir: RunDir, options: FinishOptions
) -> RunResult:
    """Read the ended run once and take it through :data:`FINISH_STEPS`."""
    from vbench.report.build import report_data_of

    run = StoredRun.load(store, outcome.run_id)
    result = RunResult(run, report_data_of(run), outcome.status, outcome.exit_code, rundir,
                       options)
    for step in FINISH_STEPS:
        result = step(store, result)
    return result


def write_samples(store: Store, result: RunResult) -> RunResult:
    """Keep every sample beside the raw outputs first: nothing measured is lost if a
    later step fails."""
    samples_to_run_dir(result.run, result.rundir)
    return result


def write_summary(store: Store, result: RunResult) -> RunResult:
    """summary.json, once the verdict is decided and kept: it carries the verdict."""
    summary_to_run_dir(result.data, result.rundir)
    return result


def figures_to_run_dir(run: StoredRun, data: ReportData, rundir: RunDir) -> None:
    """The run directory stands on its own: every sample (samples.csv, failed trials'
    included) and the per-point statistics with the verdict (summary.json)."""
    samples_to_run_dir(run, rundir)
    summary_to_run_dir(data, rundir)


def samples_to_run_dir(run: StoredRun, rundir: RunDir) -> None:
    try:
        from vbench.report.exports import csv_frame

        if run.samples is not None:  # labels a spreadsheet would run as formulas: defused
            csv_frame(run.samples).to_csv(rundir.path / "samples.csv", index=False)
    except Exception as exc:  # the store already holds them; a copy must not fail a run
        rundir.log("figures_not_written", level="warning", error=str(exc))


def summary_to_run_dir(data: ReportData, rundir: RunDir) -> None:
    try:
        from vbench.report.build import summary_json_of

        rundir.write_json("summary.json", summary_json_of(data))
    except Exception as exc:  # the store already holds them; a copy must not fail a run
        rundir.log("figures_not_written", level="warning", error=str(exc))


def describe_interrupt(store: Store, result: RunResult) -> RunResult:
    """An interrupted run says what it kept and how to resume; with no trial finished
    ok, it prints no table of "no data"."""
    if result.status != "interrupted":
        return result
    ok = sum(t["status"] == "ok" for t in result.run.trials)
    finished = sum(t["status"] in ("ok", "failed") for t in result.run.trials)
    kept = (f"interrupted: kept {finished} finished trial{'s' if finished != 1 else ''} "
            f"({ok} ok) in the store, and every trial's raw outputs and partial figures in "
            f"{result.run_dir}; `vbench run --resume {result.run_id} --lab "
            f"{result.options.lab}` runs the rest")
    return dataclasses.replace(result, kept=kept, show_table=bool(ok))


def judge(store: Store, result: RunResult) -> RunResult:
    """QoS and regression verdicts, the exit code; the regression joins the data."""
    o = result.options
    v = verdicts(store, result.data, o.regression_spec, o.fail_on_qos, result.exit_code,
                 o.width)
    data = dataclasses.replace(result.data, regression=v.regression)
    return dataclasses.replace(result, verdicts=v, exit_code=v.exit_code, data=data)


def verdicts(
    store: Store,
    data: ReportData,
    spec: str | None,
    fail_on_qos: bool,
    exit_code: int,
    width: int | None = None,
) -> Verdicts:
    """QoS and regression verdicts and the exit code they lead to: 1 for a failed QoS
    criterion (with --fail-on-qos) or a regression, unless the run itself failed (3) or
    was interrupted (130), which take precedence."""
    from vbench.report.build import check_regression_of
    from vbench.report.textfmt import format_qos, format_regression

    qos = data.analyzed().qos
    # QoS as the study reads it (the verdict): a search's failing levels are its bracket.
    reading = data.verdicted().qos
    text = format_qos(qos, width) if qos.declared and reading.status != "bracket" else ""
    qos_failed = fail_on_qos and reading.bad
    regression = None
    if spec is not None:
        regression = check_regression_of(store, data.stored, data.analyzed().figures, spec)
        remember_alerts(store, data, regression)
        text += format_regression(regression, width)
    regressed = regression is not None and regression.regressed
    rep = data.verdicted().repeat  # repeat: {…, require: true}: a missed target fails
    missed = rep is not None and rep.require and not rep.met
    reason = ""
    if exit_code == EXIT_OK and (qos_failed or regressed or missed):
        exit_code = EXIT_QOS
        why = [*(["QoS failed"] if qos_failed else []),
               *(["significant regression"] if regressed else []),
               *(["confidence target not met"] if missed else [])]
        reason = f"{' and '.join(why)} (exit {exit_code})"
    return Verdicts(text, exit_code, regression, reason)


def remember_alerts(store: Store, data: ReportData, regression: RegressionResult) -> None:
    """What tonight's check alerted on, kept in the store: later nights list it without
    failing (an alert fires once; vbench/analysis/nightly_check.py)."""
    from vbench.analysis.nightly_check import alerts_raised
    from vbench.results.triage import record_alerts

    row = data.stored.row
    if row is not None and regression.regressed:
        record_alerts(store, alerts_raised(regression, row), row.run_id)


def write_report(store: Store, result: RunResult) -> RunResult:
    """report.html in the run directory (unless --no-report)."""
    if not result.options.write_report:
        return result
    from vbench.report.build import write_run_report

    path = write_run_report(result.data, result.run_dir / "report.html")
    return dataclasses.replace(result, report=path)


def publish(store: Store, result: RunResult) -> RunResult:
    """Send the run to its lab's publishing targets (the stored lab's ``publish:``). A
    target that fails, or anything else going wrong here, never fails the run: it is
    kept in publish.json for `vbench publish RUN`, and said."""
    from vbench.publish import Outcome

    try:
        if not _publishes(result.run.record):
            return result
        outcomes = tuple(publish_stored(result.run, result.data, result.exit_code,
                                        str(result.report) if result.report else None))
    except Exception as exc:  # publishing must not cost the run its end
        result.rundir.log("publish_failed", level="warning", error=str(exc))
        outcomes = (Outcome("publish", False, f"{type(exc).__name__}: {exc}"),)
    return dataclasses.replace(result, published=outcomes)


def _publishes(record: dict[str, Any]) -> bool:
    """Whether the run's lab publishes it: a ``publish:`` section whose tags it has."""
    from vbench.config.publish import Publish

    spec = (record.get("lab") or {}).get("publish")
    return bool(spec) and Publish.model_validate(spec).wants(record.get("tags") or ())


def publish_stopped(store: Store, rundir: RunDir, exit_code: int,
                    say: Callable[[str], None] | None) -> None:
    """Publish a stored run that an error stopped (no finish step ran for it): its
    targets learn that the night failed, not only the night after. Never raises: the
    run's own error is what its command reports."""
    from vbench.report.build import report_data_of

    try:
        run = StoredRun.load(store, rundir.run_id)
        if not _publishes(run.record):
            return
        outcomes = publish_stored(run, report_data_of(run), exit_code, None)
    except Exception as exc:
        rundir.log("publish_failed", level="warning", error=str(exc))
        return
    for o in outcomes:
        if say is not None:
            say(o.line(rundir.path, rundir.run_id))


def publish_stored(run: StoredRun, data: ReportData, exit_code: int,
                   report: str | None) -> list[Outcome]:
    """Publish a stored run as its run directory and summary have it (`run`'s end, and
    `vbench publish RUN --again` of a run that never published)."""
    from vbench.config.publish import Publish
    from vbench.publish import facts_of, publish_run
    from vbench.publish.payload import alerts_of
    from vbench.report.build import summary_json_of

    spec = Publish.model_validate((run.record.get("lab") or {}).get("publish"))
    facts = facts_of(summary_json_of(data), run.record, exit_code, report,
                     alerts_of(data.regression))
    return publish_run(Path(run.run_dir), spec, facts)


def json_document(store: Store, result: RunResult) -> RunResult:
    """What `vbench run --json` prints (only built when asked)."""
    if not result.options.as_json:
        return result
    from vbench.report.build import summary_json_of
    from vbench.report.exports import finite

    doc = dict(summary_json_of(result.data))  # with the verdict
    doc.update(exit_code=result.exit_code, report=str(result.report) if result.report else None,
               run_dir=str(result.run_dir),
               publish=[dataclasses.asdict(o) for o in result.published])
    return dataclasses.replace(result, doc=finite(doc))


# In order: the samples first (nothing measured is lost if a later step fails);
# summary.json once the verdict is kept (it carries the verdict and the QoS as the
# verdict reads it); the JSON document last, as it carries the exit code and the
# report's path.
FINISH_STEPS: tuple[Step, ...] = (
    write_samples,
    describe_interrupt,
    decide,  # the run's one verdict (vbench/engine/verdict.py), rendered by every output
    judge,
    keep_verdict,
    write_summary,
    write_report,
    publish,  # after the report (its path is sent); never fails the run
    json_document,
)
