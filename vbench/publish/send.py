"""One delivery over HTTP: a PUT of Prometheus text to a Pushgateway group, or a POST of
JSON to a webhook. Secrets (a URL or header by reference, basic auth) are resolved here,
at each attempt, and kept out of the error it returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vbench.config.secrets import SecretError, resolve_secret
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy_module("httpx")

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def _value(value: str, where: str, secrets: list[str]) -> str:
    if not value.startswith("${"):
        return value
    resolved = resolve_secret(value, where)
    secrets.append(resolved)
    return resolved


def _url_parts(url: str) -> list[str]:
    """What of a URL given by reference a server may echo apart (a 404 names the path
    it was sent): its user info, path and query, each kept out of errors as well."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    return [p for p in (parts.netloc.rpartition("@")[0], parts.path, parts.query)
            if len(p) > 1]


def send(record: dict[str, Any]) -> str | None:
    """Deliver ``record`` (see :func:`vbench.publish.deliveries`); None when the target
    took it, else why not, on one line."""
    spec, secrets = record["spec"], []
    try:
        url = _value(spec["url"], f"{record['name']}: url", secrets)
        if secrets:  # the URL is a secret: so is each part a server may echo
            secrets += _url_parts(url)
        if record["kind"] == "pushgateway":
            auth = None
            if spec.get("username") is not None:
                auth = (spec["username"],
                        _value(spec["password"], f"{record['name']}: password", secrets))
            request = {"method": "PUT", "url": url.rstrip("/") + record["path"],
                       "content": record["payload"].encode(), "auth": auth,
                       "headers": {"Content-Type": PROMETHEUS_TEXT}}
        else:
            headers = {k: _value(v, f"{record['name']}: headers.{k}", secrets)
                       for k, v in spec.get("headers", {}).items()}
            request = {"method": "POST", "url": url, "json": record["payload"],
                       "headers": headers}
        response = httpx.request(**request, timeout=float(spec["timeout"]))
    except SecretError as exc:
        return str(exc)
    except Exception as exc:  # HTTPError, InvalidURL (not an HTTPError), ...: one target
        # that cannot be sent to must not stop the others, nor their outbox
        return _scrub(f"{type(exc).__name__}: {exc}", secrets)
    if response.is_success:
        return None
    body = " ".join(response.text.split())[:200]
    return _scrub(f"HTTP {response.status_code} {response.reason_phrase}"
                  + (f": {body}" if body else ""), secrets)


def _scrub(text: str, secrets: list[str]) -> str:
    for s in sorted(secrets, key=len, reverse=True):  # the whole before its parts
        if s:
            text = text.replace(s, "***")
    return " ".join(text.split())
