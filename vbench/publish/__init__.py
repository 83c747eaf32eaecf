"""Publishing a run: its headline figures, verdict and alerts to the lab's Pushgateway and
webhooks (the lab's ``publish:`` section, vbench/config/publish.py; docs/publishing.md).

A publisher that fails never fails the run nor loses what it was to send: every delivery
(target, payload, each attempt and its error) is kept in the run directory's
``publish.json``, and ``vbench publish RUN`` sends again what was not delivered. Payloads
hold no secret: credentials are references, resolved at each attempt.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vbench.config.publish import Publish
from vbench.errors import RunNotFound
from vbench.publish.payload import (
    Alert,
    RunFacts,
    facts_of,
    grouping_path,
    prometheus_text,
    webhook_body,
)
from vbench.publish.send import send

OUTBOX = "publish.json"


@dataclass(frozen=True)
class Outcome:
    """One target's delivery after the latest attempt."""

    target: str  # "pushgateway http://…" / "webhook NAME"
    sent: bool
    error: str | None  # the latest attempt's, when not sent

    def line(self, run_dir: Path, run_id: str) -> str:
        """What `vbench run` says of it."""
        if self.sent:
            return f"published: {self.target}"
        return (f"not published: {self.target}: {self.error}; kept in {run_dir}/{OUTBOX}, "
                f"`vbench publish {run_id}` sends it again")


def deliveries(spec: Publish, facts: RunFacts) -> list[dict[str, Any]]:
    """What to send where: one record per target, its spec as the lab wrote it (secret
    references, never their values) and its payload."""
    out: list[dict[str, Any]] = []
    if spec.pushgateway is not None:
        pg = spec.pushgateway
        out.append({"kind": "pushgateway", "name": f"pushgateway {_shown(pg.url)}",
                    "spec": pg.model_dump(mode="json"), "path": grouping_path(pg.job, facts),
                    "payload": prometheus_text(facts), "attempts": [], "sent": False})
    for i, hook in enumerate(spec.webhooks, 1):
        out.append({"kind": "webhook", "name": f"webhook {hook.name or _host(hook.url, i)}",
                    "spec": hook.model_dump(mode="json"), "payload": webhook_body(facts),
                    "attempts": [], "sent": False})
    return out


def _shown(url: str) -> str:
    return url if not url.startswith("${") else "(URL by reference)"


def _host(url: str, i: int) -> str:
    if url.startswith("${"):
        return str(i)
    return url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]


def publish_run(run_dir: Path, spec: Publish, facts: RunFacts) -> list[Outcome]:
    """Send the run to every target of ``spec`` once; keep every delivery in the run
    directory (``publish.json``) whatever happens."""
    records = deliveries(spec, facts)
    return _attempt(run_dir, records, records)


def retry_run(run_dir: Path, every: bool = False) -> list[Outcome]:
    """Send again what the run could not deliver (``every``: all its deliveries)."""
    records = read_outbox(run_dir)
    todo = [r for r in records if every or not r["sent"]]
    return _attempt(run_dir, records, todo)


def read_outbox(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / OUTBOX
    try:
        return list(json.loads(path.read_text(encoding="utf-8"))["deliveries"])
    except FileNotFoundError:
        raise RunNotFound(f"{path}: the run published nothing (its lab has no `publish:` "
                          "section, or it ended before publishing)") from None


def _attempt(run_dir: Path, records: list[dict[str, Any]],
             todo: Sequence[dict[str, Any]]) -> list[Outcome]:
    for r in todo:
        error = send(r)
        r["attempts"].append({"at": time.time(), "error": error})
        r["sent"] = error is None
        _write(run_dir, records)  # after each: a kill between targets loses nothing
    if not todo:
        _write(run_dir, records)
    return [Outcome(r["name"], r["sent"], None if r["sent"] else r["attempts"][-1]["error"])
            for r in records]


def _write(run_dir: Path, records: list[dict[str, Any]]) -> None:
    tmp = run_dir / (OUTBOX + ".tmp")
    tmp.write_text(json.dumps({"deliveries": records}, indent=2, ensure_ascii=False),
                   encoding="utf-8")
    tmp.replace(run_dir / OUTBOX)


__all__ = ["Alert", "Outcome", "RunFacts", "facts_of", "publish_run", "read_outbox",
           "retry_run"]
