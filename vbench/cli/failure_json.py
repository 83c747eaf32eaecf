"""``vbench run --json`` prints one JSON document on every exit (docs/cli.md): when the
run ends before it has a result — a configuration error, a preflight that cannot reach
the lab, Ctrl-C while loading, an internal error — the document says how it ended, with
the same keys as a finished run's and the error's text, and the CLI still prints the
error on standard error and exits with its code. Also here: the check of ``--tag``,
whose values are shown by ``ls``, ``show`` and every export."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import click

from vbench.errors import (
    EXIT_INTERRUPTED,
    EXIT_LAB,
    ConfigIssue,
    ConfigValidationError,
    VbenchError,
)

F = Callable[..., Any]


def check_tags(tags: Iterable[str]) -> None:
    """Refuse a ``--tag`` holding a control character (located at that option)."""
    from vbench.config.types import text_problem

    issues = []
    for tag in tags:
        problem = text_problem(tag) or (None if tag.strip() else "a tag cannot be empty")
        if problem:
            issues.append(ConfigIssue(f"--tag {tag!r}"[:60], None, None, "", problem))
    if issues:
        raise ConfigValidationError(issues)


def _exit_code(exc: BaseException) -> int:
    if isinstance(exc, VbenchError | click.ClickException):
        return int(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt | click.exceptions.Abort):
        return EXIT_INTERRUPTED
    return EXIT_LAB  # what the CLI's main answers to an internal error


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ConfigValidationError):
        return "\n".join(str(i) for i in exc.issues)
    if isinstance(exc, KeyboardInterrupt | click.exceptions.Abort):
        return "interrupted"
    if isinstance(exc, VbenchError | click.ClickException):
        return str(exc.message if isinstance(exc, click.ClickException) else exc)
    return f"internal error: {type(exc).__name__}: {exc}"


def failure_doc(exc: BaseException, tags: Iterable[str]) -> dict[str, Any]:
    """The document of a run that ended before it had a result."""
    code = _exit_code(exc)
    return {
        "run_id": None, "scenario_name": None, "scenario": None,
        "status": "interrupted" if code == EXIT_INTERRUPTED else "error",
        "tags": list(tags), "exit_code": code, "report": None, "run_dir": None,
        "points": [], "qos": None, "regression": None, "warnings": [], "publish": [],
        "error": _error_text(exc),
    }


def one_json_document(f: F) -> F:
    """Wrap the ``run`` command: its tags are checked first, and with ``--json`` an
    exception that ends it is told on stdout as one document before it propagates."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            check_tags(kwargs.get("tags", ()))
            return f(*args, **kwargs)
        except click.exceptions.Exit:
            raise  # the command's own exit: its document is printed
        except BaseException as exc:
            if kwargs.get("as_json") and isinstance(exc, Exception | KeyboardInterrupt):
                import json

                click.echo(json.dumps(failure_doc(exc, kwargs.get("tags", ())), indent=2))
            raise

    return wrapper
