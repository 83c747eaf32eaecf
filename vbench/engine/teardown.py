"""The end of one `vbench run`, whatever ends it: the guests' processes stopped and their
connections closed, what the run created in vSphere removed (a second Ctrl-C cannot cut
it short), and the run's final status in the store. :mod:`vbench.engine.session` calls
these from its final clean-up; `vbench cleanup RUN` settles a run killed before them
(:mod:`vbench.engine.settle`)."""

from __future__ import annotations

import contextlib
import sys
import time

from vbench.engine.runner import ProgressSink, RunOutcome
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import LabError, VbenchError
from vbench.guest.ssh import GuestPool
from vbench.results.rundir import RunDir
from vbench.results.store import Store
from vbench.results.stored import StoredRun
from vbench.vsphere.journal import pending


def end_run(store: Store, rundir: RunDir | None, status: str, outcome: RunOutcome | None) -> None:
    """The run's final status and the log's end. When the run raises, its figures are
    written beside its raw outputs here (else :func:`vbench.engine.finish.finish_run`
    writes them from the run it reads back)."""
    if rundir is None:
        return
    failed = len(outcome.failed) if outcome is not None else 0
    try:
        store.finish_run(rundir.run_id, status, time.time())
    except VbenchError as exc:
        rundir.log("status_not_stored", level="error", status=status, error=str(exc))
        if sys.exc_info()[1] is None:
            raise
    else:
        if sys.exc_info()[1] is not None:
            _write_figures(store, rundir)
    finally:
        rundir.log("run_end", status=status, failed=failed)


def left_in_vsphere(vsphere: VSphereRun) -> list[str]:
    """What the journal still has to remove (for the second Ctrl-C during clean-up)."""
    if vsphere.journal is None:
        return []
    return [f"{i.kind} {i.name}" for i in pending(vsphere.journal.read())]


def vsphere_cleanup(
    vsphere: VSphereRun,
    rundir: RunDir | None,
    progress: ProgressSink | None,
    raise_errors: bool = True,
) -> None:
    """Remove what the run created — after a normal end, a failure or an interrupt. Ctrl-C
    does not stop it (:class:`RunSignals`; `vbench cleanup RUN_ID` if it is killed)."""
    from vbench.engine.verdict import cleanup_text

    try:
        if vsphere.journal is None:
            return
        left = left_in_vsphere(vsphere)
        if rundir is not None:
            rundir.log("vsphere_cleanup_start", pending=len(left))
        if progress is not None and left:  # said before the wait, not only after it
            shown = ", ".join(left[:4]) + (f" and {len(left) - 4} more" if len(left) > 4 else "")
            progress.notice(f"vSphere clean-up: waiting for vCenter to remove {shown}")
        report = vsphere.cleanup()
        if rundir is not None:
            rundir.log(
                "vsphere_cleanup",
                level="error" if report.errors or report.skipped else "info",
                destroyed=report.destroyed,
                kept=report.kept,
                missing=report.missing,
                skipped=report.skipped,
                errors=report.errors,
            )
        if progress is not None:
            progress.notice(cleanup_text(report, rundir))
        if report.errors and raise_errors:
            raise LabError(
                "vSphere cleanup",
                f"{'; '.join(report.errors)} (finish with `vbench cleanup {vsphere.run_id}`)",
            )
    finally:
        vsphere.close()


def _write_figures(store: Store, rundir: RunDir) -> None:
    """The figures of a run that raised, beside its raw outputs."""
    from vbench.engine.finish import figures_to_run_dir
    from vbench.report.build import report_data_of

    try:
        run = StoredRun.load(store, rundir.run_id)
        data = report_data_of(run)
    except Exception as exc:  # the store already holds them; a copy must not fail a run
        rundir.log("figures_not_written", level="warning", error=str(exc))
        return
    figures_to_run_dir(run, data, rundir)


def release_guests(pool: GuestPool) -> None:
    """Stop whatever is still tracked and close every connection. A guest that died
    during the run has already failed its trials; it must not turn the end of the run
    into an error as well."""
    for guest in pool.guests():
        with contextlib.suppress(VbenchError):
            guest.kill_all()
    pool.close()
