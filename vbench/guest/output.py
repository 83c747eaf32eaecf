"""Reading a command's stdout: the pid marker, line streaming, decoding."""

from __future__ import annotations

from collections.abc import Callable

from vbench.guest import shell


class StdoutSink:
    """Collects stdout, removes the pid marker line, hands complete lines to ``on_line``.

    Lines before the marker come from the login shell's startup files (a chatty
    ~/.bashrc) and count as output; the marker itself never does.
    """

    def __init__(self, on_line: Callable[[str], None] | None) -> None:
        self.on_line = on_line
        self.pid: int | None = None
        self._head = True
        self._buf = bytearray()
        self._parts: list[bytes] = []

    def feed(self, data: bytes) -> None:
        self._buf += data
        while self._head and (nl := self._buf.find(b"\n")) >= 0:
            line = bytes(self._buf[: nl + 1])
            del self._buf[: nl + 1]
            text = line[:-1].decode("utf-8", "replace")
            if text.startswith(shell.PID_MARKER) and text[len(shell.PID_MARKER) :].isdigit():
                self.pid = int(text[len(shell.PID_MARKER) :])
                self._head = False
            else:
                self._emit(line)
        if self._head:
            return
        if self.on_line is None:
            self._parts.append(bytes(self._buf))
            self._buf.clear()
            return
        while (nl := self._buf.find(b"\n")) >= 0:
            line = bytes(self._buf[: nl + 1])
            del self._buf[: nl + 1]
            self._emit(line)

    def _emit(self, line: bytes) -> None:
        self._parts.append(line)
        if self.on_line is not None:
            self.on_line(line.rstrip(b"\n").decode("utf-8", "replace"))

    def finish(self) -> str:
        """All of stdout; a last line without newline goes to ``on_line`` too."""
        if self._buf:
            self._emit(bytes(self._buf))
            self._buf.clear()
        return b"".join(self._parts).decode("utf-8", "replace")


def parse_date(raw: str) -> float | None:
    """Seconds since the epoch from ``date +%s.%N`` output (its last line).

    busybox date may print a literal "N" for %N: whole seconds are still usable.
    """
    lines = raw.strip().splitlines()
    head = lines[-1].strip() if lines else ""
    whole, _, frac = head.partition(".")
    if not whole.isdigit():
        return None
    return float(f"{whole}.{frac}") if frac.isdigit() else float(whole)
