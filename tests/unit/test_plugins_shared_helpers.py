"""The helpers every plugin shares, once: template rendering with the control-character
guard (vbench.templates) and stopping a local process (vbench.localproc)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vbench.errors import ConfigError
from vbench.localproc import pid_alive, read_pid, stop_child, stop_pid
from vbench.resources import data_dir
from vbench.templates import Templates, control_line, has_control

# ----------------------------------------------------------------------------- templates


def _folder(tmp_path: Path, text: str) -> Templates:
    (tmp_path / "t.j2").write_text(text)
    return Templates(tmp_path)


def test_template_renders_values_without_html_escaping(tmp_path: Path) -> None:
    t = _folder(tmp_path, "name={{ name }}\n{% if on %}flag\n{% endif %}end\n")
    assert t.render("t.j2", name="<a&b>", on=True) == "name=<a&b>\nflag\nend\n"


def test_template_refuses_an_undefined_value(tmp_path: Path) -> None:
    t = _folder(tmp_path, "x={{ missing }}\n")
    with pytest.raises(Exception, match="missing"):
        t.render("t.j2")


@pytest.mark.parametrize("bad", ["a\x00b", "a\x08b", "a\x1bb", "a\x7fb", "a\nb", "a\rb"])
def test_template_refuses_a_value_that_adds_a_control_character(tmp_path: Path, bad: str) -> None:
    t = _folder(tmp_path, "first\nvalue={{ v }}\n")
    with pytest.raises(ConfigError, match=r"t\.j2: value .* refused: a control character"):
        t.render("t.j2", v=bad)


def test_template_text_with_a_control_character_names_its_line(tmp_path: Path) -> None:
    t = _folder(tmp_path, "first\nvalue=\x01{{ v }}\n")
    with pytest.raises(ConfigError, match=r"t\.j2: line 2 has a control character"):
        t.render("t.j2", v="ok")


def test_tab_is_refused_unless_the_driver_allows_it(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_text("k {{ v }}\n")
    with pytest.raises(ConfigError, match="refused: a control character"):
        Templates(tmp_path).render("t.j2", v="a\tb")
    assert Templates(tmp_path, tabs=True).render("t.j2", v="a\tb") == "k a\tb\n"
    # Other control characters stay refused where tabs are allowed.
    with pytest.raises(ConfigError):
        Templates(tmp_path, tabs=True).render("t.j2", v="a\x01b")


def test_missing_template_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"'nope.j2' not found in {tmp_path}"):
        Templates(tmp_path).render("nope.j2")


def test_value_and_line_checks() -> None:
    # A newline in a value splits the rendered line, so values are checked before
    # rendering (validators call has_control); the rendered text is checked line by line.
    assert has_control("a\nb") and has_control("a\rb") and has_control("a\nb", tabs=True)
    assert has_control("a\tb") and not has_control("a\tb", tabs=True)
    assert not has_control("plain value, with spaces")
    assert control_line("ok\nok\nbad\x01\n") == 3
    assert control_line("ok\n") is None
    # A line break other than \n is a control character inside its line, not an end.
    for char in "\r\x0b\x0c\x1c\x1d\x1e":
        assert control_line(f"ok\nkey = a{char}b\n") == 2, repr(char)


def test_builtin_driver_templates_come_from_the_drivers_folder() -> None:
    assert Templates.for_driver("fio", "vbench.workloads.fio").folder == data_dir("drivers") / "fio"
    assert (Templates.for_driver("redis").folder / "redis.conf.j2").is_file()


def test_plugin_distribution_templates_come_from_its_own_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "labplugin"
    (pkg / "drivers" / "mine").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "drivers" / "mine" / "x.j2").write_text("v={{ v }}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    t = Templates.for_driver("mine", "labplugin.driver")
    assert t.folder == pkg / "drivers" / "mine"
    assert t.render("x.j2", v=3) == "v=3\n"


# ----------------------------------------------------------------------------- processes

# The children block in signal.pause(): they do nothing until a signal ends them.
_IGNORES_TERM = (
    "import signal\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "while True:\n    signal.pause()\n"
)
_WAITS = "import signal; print('ready', flush=True); signal.pause()"


def _child(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"  # the handler is installed: no race
    return proc


def test_stop_child_ends_and_reaps_a_child_on_sigterm() -> None:
    proc = _child(_WAITS)
    assert stop_child(proc, timeout=30) is True
    assert proc.returncode == -15 and not pid_alive(proc.pid)
    assert stop_child(proc, timeout=30) is True  # already ended: nothing to do


def test_stop_child_kills_a_child_that_ignores_sigterm() -> None:
    proc = _child(_IGNORES_TERM)
    assert stop_child(proc, timeout=0.3) is False
    assert proc.returncode == -9


def test_stop_pid_kills_a_process_that_ignores_sigterm() -> None:
    proc = _child(_IGNORES_TERM)
    try:
        assert pid_alive(proc.pid)
        assert stop_pid(proc.pid, timeout=0.3) is False
        assert proc.wait(timeout=30) == -9
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_stop_pid_counts_an_unreaped_child_as_gone() -> None:
    proc = _child(_WAITS)
    assert stop_pid(proc.pid, timeout=30) is True  # a zombie until waited for: gone
    assert proc.wait(timeout=30) == -15


def test_pid_file_reading(tmp_path: Path) -> None:
    f = tmp_path / "x.pid"
    assert read_pid(f) is None
    f.write_text("1234 127.0.0.1:8989\n")
    assert read_pid(f) == 1234
    f.write_text("garbage\n")
    assert read_pid(f) is None
    f.write_text("")
    assert read_pid(f) is None
