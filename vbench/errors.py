"""The one error hierarchy. Layers raise these; only the CLI prints them.

Exit codes (docs/cli.md#exit-codes): 0 ok, 1 QoS or regression failure, 2 usage or
configuration error, 3 lab or infrastructure error, 130 interrupted.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_QOS = 1
EXIT_CONFIG = 2
EXIT_LAB = 3
EXIT_INTERRUPTED = 130


class VbenchError(Exception):
    """Base of every error vbench reports to a user."""

    exit_code = EXIT_LAB


class ConfigError(VbenchError):
    """A scenario, lab or command-line mistake, found before anything is touched."""

    exit_code = EXIT_CONFIG


class ConfigIssue:
    """One located problem in a config file: ``file:line:col: path: message``."""

    __slots__ = ("column", "file", "line", "message", "path")

    def __init__(
        self, file: str, line: int | None, column: int | None, path: str, message: str
    ) -> None:
        self.file, self.line, self.column, self.path, self.message = (
            file,
            line,
            column,
            path,
            message,
        )

    def __str__(self) -> str:
        where = _one_line(self.file)
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        # A value quoted in a message may hold a newline or a terminal escape: one line,
        # escaped, so that a hostile name can neither add a line nor move the cursor.
        message = _one_line(self.message)
        return f"{where}: {_one_line(self.path)}: {message}" if self.path else f"{where}: {message}"


def _one_line(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ConfigValidationError(ConfigError):
    """Several located config problems at once."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


class LabError(VbenchError):
    """A guest, host or vCenter failed: one line naming it and the cause."""

    exit_code = EXIT_LAB

    def __init__(self, target: str, cause: str) -> None:
        self.target, self.cause = target, cause
        super().__init__(f"{target}: {cause}")


class GuestError(LabError):
    """An SSH guest could not be reached or a command on it failed."""


class CommandFailed(GuestError):
    """A remote command exited non-zero."""

    def __init__(self, target: str, command: str, status: int, tail: str) -> None:
        self.command, self.status, self.tail = command, status, tail
        detail = f"`{command}` exited {status}"
        if tail.strip():
            detail += f": {tail.strip().splitlines()[-1]}"
        super().__init__(target, detail)


class StoreError(VbenchError):
    """The results store could not be opened, migrated or written."""

    exit_code = EXIT_LAB


class RunNotFound(VbenchError):
    exit_code = EXIT_CONFIG


class ParseError(VbenchError):
    """A tool output could not be parsed; names the file and what was wrong."""

    exit_code = EXIT_CONFIG


class Interrupted(VbenchError):
    exit_code = EXIT_INTERRUPTED
