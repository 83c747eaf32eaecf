"""The run directory: every file one run leaves on disk, under ``<results>/<run-id>/``.

Layout::

    scenario.yaml      resolved scenario, secrets removed
    lab.yaml           resolved lab, secrets removed
    plan.json          the expanded plan
    log.jsonl          structured log: one JSON object per line (ts, level, event, fields)
    controller.json    the vbench process running the run (pid, host): is it still alive?
    guest-processes.jsonl  guests reached and process groups started (vbench.guest.ledger)
    raw/<point>-<trial>/<guest>/...   raw tool outputs
    attempts/<point>-<trial>.<n>/{raw,series}/  an attempt run again (disturbance: retry)
    environment.json   controller environment
    summary.json       figures per point
    report.html        the rendered report
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from vbench.config.secrets import vbench_home
from vbench.errors import ParseError
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import json
else:  # `vbench validate` only asks where the results go (results_dir_default)
    json = lazy_module("json")

CONTROLLER_FILE = "controller.json"
SECRET_KEYS: tuple[str, ...] = ("password", "secret", "token", "passphrase")
REDACTED = "***"
LOG_LEVELS = frozenset({"debug", "info", "warning", "error"})

# One lock per log file, shared by every RunDir of that path in this process, so two
# objects for one run (engine and a collector thread, say) cannot interleave lines.
_LOG_LOCKS: dict[Path, threading.Lock] = {}
_LOG_LOCKS_GUARD = threading.Lock()


def new_run_id(now: float | None = None) -> str:
    """``YYYYMMDD-HHMMSS-<8 hex>`` in UTC: sorts by start time, and the random tail keeps
    ids from two processes started in the same second apart."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(4)}"




def controller_alive(run_dir: Path) -> bool | None:
    """Whether the vbench process that runs (or ran) the run in ``run_dir`` is still
    alive; None when the run directory does not say, or the run was on another machine."""
    try:
        doc = json.loads((Path(run_dir) / CONTROLLER_FILE).read_text(encoding="utf-8"))
        pid = int(doc["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if doc.get("host") != socket.gethostname():
        return None
    from vbench.localproc import pid_alive  # subprocess, signal: not for validate's path

    return pid_alive(pid)


def results_dir_default() -> Path:
    """``$VBENCH_RESULTS``, else ``<vbench home>/results``."""
    results = os.environ.get("VBENCH_RESULTS")
    return Path(results).expanduser() if results else vbench_home() / "results"


def _key_words(key: str) -> set[str]:
    """``db_password`` -> {db, password}; ``apiToken`` -> {api, token}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return {w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w}


def _is_secret_key(key: object, secret_keys: Iterable[str]) -> bool:
    if not isinstance(key, str):
        return False
    # Whole words, not substrings: "tokens_per_sec" is a figure, "api_token" a secret.
    words = _key_words(key) | {key.lower()}
    return any(s.lower() in words for s in secret_keys)


def redact(obj: Any, secret_keys: Iterable[str] = SECRET_KEYS) -> Any:
    """A deep copy of ``obj`` with every non-null value under a secret key set to ``***``.

    The decision is made on keys, never on values: a password resolved from
    ``${env:..}`` or ``${file:..}`` looks like any other string once resolved.
    A key is secret when one of its words (split on ``_``, ``-``, ``.`` and camelCase)
    is one of ``secret_keys``. Pass plain data (dicts, lists); dump models first.
    """
    keys = tuple(secret_keys)
    if isinstance(obj, Mapping):
        return {
            k: (
                REDACTED
                if v is not None and _is_secret_key(k, keys) and not _is_reference(v)
                else redact(v, keys)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [redact(v, keys) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact(v, keys) for v in obj)
    if isinstance(obj, set | frozenset):
        return type(obj)(redact(v, keys) for v in obj)
    return obj


def _is_reference(value: Any) -> bool:
    """``${env:NAME}`` / ``${file:PATH}`` say where a secret lives, not what it is: keep
    them, so a reader of the run directory knows which secret the lab used."""
    return isinstance(value, str) and re.fullmatch(r"\$\{(env|file):[^}]+\}", value) is not None


def _plain(data: Any) -> Any:
    """Tuples to lists, paths and other objects to strings: what JSON and YAML can hold."""
    return json.loads(json.dumps(data, default=str))


def _atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunDir:
    """The directory of one run; created if missing, reused if present."""

    def __init__(self, results_dir: Path, run_id: str) -> None:
        if not run_id or "/" in run_id or "\\" in run_id or run_id in (".", ".."):
            raise ValueError(f"invalid run id {run_id!r}")
        self.run_id = run_id
        self.path = Path(results_dir) / run_id
        self.path.mkdir(parents=True, exist_ok=True)
        self.log_path = self.path / "log.jsonl"
        with _LOG_LOCKS_GUARD:
            self._log_lock = _LOG_LOCKS.setdefault(self.log_path.resolve(), threading.Lock())

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def file(self, name: str) -> Path:
        """``name`` (may hold sub-folders) inside the run directory; refuses to escape it."""
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"{name!r} is not a relative path inside the run directory")
        return self.path / rel

    def write_json(self, name: str, data: Any) -> Path:
        path = self.file(name)
        _atomic_write(path, json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")
        return path

    def write_yaml(self, name: str, data: Any) -> Path:
        path = self.file(name)
        text = yaml.safe_dump(
            _plain(data), sort_keys=False, default_flow_style=False, allow_unicode=True
        )
        _atomic_write(path, text)
        return path

    def write_controller(self) -> Path:
        """Record this process as the one running the run (see :func:`controller_alive`)."""
        return self.write_json(
            CONTROLLER_FILE,
            {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()},
        )

    def raw_dir(self, point: int, trial: int) -> Path:
        """``raw/<point>-<trial>/``, created; callers add ``<guest>/`` below it."""
        path = self.path / "raw" / f"{int(point)}-{int(trial)}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def set_aside(self, point: int, trial: int, attempt: int) -> Path:
        """Move an attempt that runs again out of ``raw/`` and ``series/`` (kept, under
        ``attempts/<point>-<trial>.<attempt>/``): the next attempt writes in their place,
        and no file only this attempt wrote is read as the kept attempt's. A number an
        earlier session of a resumed run set aside already takes the next free one."""
        from vbench.results.collected import SERIES_DIR

        key = f"{int(point)}-{int(trial)}"
        n = int(attempt)
        while (self.path / "attempts" / f"{key}.{n}").exists():
            n += 1
        aside = self.path / "attempts" / f"{key}.{n}"
        for top in ("raw", SERIES_DIR):
            src = self.path / top / key
            if src.exists():
                aside.mkdir(parents=True, exist_ok=True)
                src.rename(aside / top)
        return aside

    def log(self, event: str, level: str = "info", **fields: Any) -> None:
        """Append one structured line. Safe from many threads; secret-keyed fields are
        redacted. A field named ``ts`` is kept as ``ts_`` so the timestamp stays ours."""
        if level not in LOG_LEVELS:
            raise ValueError(f"log level {level!r} is not one of {sorted(LOG_LEVELS)}")
        record: dict[str, Any] = {"ts": time.time(), "level": level, "event": event}
        for key, value in redact(fields).items():
            record[f"{key}_" if key in record else key] = value
        line = json.dumps(record, default=str, ensure_ascii=False) + "\n"
        with self._log_lock, self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(line)

    def read_log(self) -> list[dict[str, Any]]:
        """All log records in order. A torn last line (a process killed mid-write) is
        dropped; a bad line elsewhere is a ParseError naming it."""
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        records: list[dict[str, Any]] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if number == len(lines):
                    break
                raise ParseError(f"{self.log_path}:{number}: not a JSON object: {exc}") from exc
        return records
