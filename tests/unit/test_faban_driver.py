"""The faban driver's pure parts: the run configuration vbench writes, its parameters,
and the figures made from a real recorded Faban run (the shared corpus)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.corpus import SHARED, need
from vbench.parsers.faban import import_run
from vbench.workloads.faban import faban_window, figures
from vbench.workloads.faban.params import FabanParams, driver_argv
from vbench.workloads.faban.runconfig import RunConfigError, RunShape, rewrite

CORPUS = SHARED / "faban_olio_cloudsuite"
RUN = "parsa-epfl_cloudsuite__web-serving_"


def run_xml() -> str:
    return need(CORPUS / f"{RUN}run.xml").read_text()


def recorded(summary: str | None = None):  # type: ignore[no-untyped-def]
    def text(name: str) -> str:
        return need(CORPUS / f"{RUN}run129_{name}").read_text()

    return import_run(summary or text("summary.xml"), text("detail.xan"), text("driver.log"))


def test_run_config_gets_phases_users_and_output_and_nothing_else() -> None:
    original = run_xml()
    out, shape = rewrite(original, output_dir="/w/a&b", phases=(60, 1800.4, 30), users=400,
                         source="run.xml")  # fmt: skip
    assert shape == RunShape(60.0, 1800.0, 30.0, 400)
    assert "<fa:rampUp>60</fa:rampUp>" in out and "<fa:steadyState>1800</fa:steadyState>" in out
    assert "<fa:scale>400</fa:scale>" in out and "<outputDir>/w/a&amp;b</outputDir>" in out
    changed = [(a, b) for a, b in zip(original.splitlines(), out.splitlines(), strict=True)
               if a != b]  # fmt: skip
    assert len(changed) == 5  # scale, three phases, outputDir: comments and layout kept


def test_run_config_keeps_the_files_own_phases_when_asked() -> None:
    out, shape = rewrite(run_xml(), output_dir="/o", phases=None, users=None, source="r")
    assert shape == RunShape(10.0, 30.0, 10.0, 2)
    assert "<outputDir>/o</outputDir>" in out


@pytest.mark.parametrize(("edit", "message"), [
    (("<fa:rampUp>10</fa:rampUp>", ""), "no <rampUp> element"),
    (('unit="time"', 'unit="cycles"'), "counts cycles, not seconds"),
    (("<outputDir>", "<outputDir>/a</outputDir><outputDir>"), "2 <outputDir> elements"),
    (("</webbenchmark>", ""), "not XML"),
])  # fmt: skip
def test_run_config_that_cannot_take_the_settings_is_refused_with_why(
    edit: tuple[str, str], message: str
) -> None:
    text = run_xml().replace(*edit)
    with pytest.raises(RunConfigError, match=message):
        rewrite(text, output_dir="/o", phases=(1, 2, 3), users=None, source="run.xml")


def test_command_placeholders_are_filled_item_by_item_and_unknown_ones_refused() -> None:
    p = FabanParams(command=["/opt/f/run", "-c", "{run_config}", "--out={output_dir}"],
                    run_config="/x/run.xml")  # fmt: skip
    assert driver_argv(p, "/g/run.xml", "/g/out dir") == [
        "/opt/f/run", "-c", "/g/run.xml", "--out=/g/out dir"]
    with pytest.raises(ValidationError, match="unknown placeholder"):
        FabanParams(command=["run", "{users}"])
    with pytest.raises(ValidationError, match="set run_config"):
        FabanParams(command=["run", "{run_config}"])
    with pytest.raises(ValidationError, match="control characters"):
        FabanParams(command=["run\n[global]"])


def test_figures_of_the_recorded_run_per_operation_and_whole_mix() -> None:
    run = recorded()
    samples = figures.instance_samples(0, "client1", run)
    by = {(s.metric, dict(s.labels).get("operation")): s.value for s in samples}
    # 240 operations over the 30 s steady state: Faban's own metric, 8 ops/s.
    assert by[("ops_per_sec", "all")] == pytest.approx(8.0)
    assert by[("operations", "all")] == 240.0
    assert by[("rt_avg", "DoLogin")] == pytest.approx(263.226)
    assert by[("mix", "BrowsetoElgg")] == pytest.approx(2.5)
    assert by[("faban_passed", None)] == 1.0 and by[("steady_seconds", None)] == 30.0


def test_cross_instance_figure_is_missing_when_one_instance_lacks_it() -> None:
    run = recorded()
    text = need(CORPUS / f"{RUN}run129_summary.xml").read_text()
    other = recorded(text.replace('name="DoLogin"', 'name="SignIn"'))
    agg = {(s.metric, dict(s.labels).get("operation")): s.value
           for s in figures.aggregate_samples([run, other])}  # fmt: skip
    assert agg[("ops_per_sec", None)] == pytest.approx(16.0)
    assert agg[("rt_avg", "DoLogin")] is None  # only one instance has it: no partial mean
    assert agg[("rt_avg", "BrowsetoElgg")] == pytest.approx(107.109)


def test_fabans_window_is_trusted_only_with_a_utc_start() -> None:
    run = recorded()
    shape = RunShape(10.0, 30.0, 10.0, 2)
    start, end = faban_window(run, shape) or (0.0, 0.0)
    assert end - start == 30.0
    assert faban_window(run, None) is None  # ramp-up unknown without the configuration
    local = recorded(need(CORPUS / f"{RUN}run129_summary.xml").read_text()
                     .replace(" UTC 2022", " CEST 2022"))  # fmt: skip
    assert faban_window(local, shape) is None


def test_run_config_values_go_through_the_guest_file_rendering_path() -> None:
    from vbench.errors import ConfigError

    with pytest.raises(ConfigError, match="faban outputDir"):
        rewrite(run_xml(), output_dir="/w/x\n<fa:scale>9</fa:scale>", phases=None, users=None,
                source="run.xml")  # fmt: skip
    out, _ = rewrite(run_xml(), output_dir="/w/<a>&'b'", phases=None, users=None, source="r")
    assert "<outputDir>/w/&lt;a&gt;&amp;&apos;b&apos;</outputDir>" in out
