"""The lab's `publish:` section: where every run of the lab sends its figures, verdict and
alerts when it ends (a Prometheus Pushgateway, JSON webhooks). See docs/publishing.md.

The section lives in the lab (where the results of a lab go is the lab's business, and
the lab already holds its secrets as references); it is left out of the lab fingerprint
(vbench/results/identity.py), so adding a webhook does not start a new history.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, model_validator

from vbench.config.types import Duration, OneLine, SecretRef, Strict, new_list

_REF = re.compile(r"^\$\{(env|file):")
# Header names whose values are credentials: a literal value would put a secret in the
# lab file (and in every run directory's copy of it).
_SECRET_HEADERS = re.compile(r"auth|token|secret|key|pass|cookie|credential|signature",
                             re.I)


def _http_url(value: str) -> str:
    if _REF.match(value):
        return value  # a reference (a webhook URL that embeds its token): read when sent
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError("expected an http:// or https:// URL, or a secret reference "
                         "(${env:NAME}, ${file:PATH})")
    try:
        urlsplit(value).port  # noqa: B018 - raises on a port that is no number 0-65535
    except ValueError as exc:
        raise ValueError(f"not a URL vbench can send to: {exc}") from None
    if "@" in re.split(r"[/?#]", value.split("://", 1)[1], maxsplit=1)[0]:
        # Shown in messages and kept in publish.json and the run's lab.yaml as written.
        raise ValueError("a user:password@ in a URL is a credential: give the pushgateway's "
                         "username and password (a reference), or the whole URL as a secret "
                         "reference (${env:NAME}, ${file:PATH})")
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url)]


class LabModel(Strict):
    """A model of the lab file's ``publish:`` (imported by config.lab for Lab.publish)."""


class Pushgateway(LabModel):
    """A Prometheus Pushgateway: each run replaces its scenario's group there."""

    url: HttpUrl = Field(description="the Pushgateway, e.g. http://pushgateway:9091 "
                         "(or a secret reference)")
    job: OneLine = Field("vbench", min_length=1,
                         description="the `job` label of every pushed series")
    username: str | None = Field(None, description="HTTP basic auth user")
    password: SecretRef | None = Field(
        None, description="HTTP basic auth password (a reference, never literal)")
    timeout: Duration = Field(10.0, gt=0, description="connect and response timeout")

    @model_validator(mode="after")
    def _auth_pair(self) -> Pushgateway:
        if (self.username is None) != (self.password is None):
            raise ValueError("give username and password together (basic auth)")
        return self


class Webhook(LabModel):
    """A URL that receives each run's summary as one JSON POST."""

    url: HttpUrl = Field(description="where to POST, e.g. https://ci.example/hooks/vbench "
                         "(a secret reference when the URL embeds a token)")
    name: OneLine | None = Field(None, description="shown in messages (default: the URL's "
                                 "host, or webhook N)")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="extra request headers; a credential header (a name with auth, token, "
        "key, secret, pass, cookie, credential or signature) must be a secret reference")
    timeout: Duration = Field(10.0, gt=0, description="connect and response timeout")

    @model_validator(mode="after")
    def _secret_headers(self) -> Webhook:
        for name, value in self.headers.items():
            if _SECRET_HEADERS.search(name) and not _REF.match(value):
                raise ValueError(f"header {name!r} holds a credential: give a secret "
                                 "reference (${env:NAME} or ${file:PATH}), not its value")
            if any(c in name + value for c in "\r\n"):
                raise ValueError(f"header {name!r}: a newline cannot be sent in a header")
        return self


class Publish(LabModel):
    """Where each run of this lab is sent when it ends (docs/publishing.md).

    A target that fails does not fail the run: the run keeps what it could not send and
    `vbench publish RUN` retries."""

    pushgateway: Pushgateway | None = Field(
        None, description="push headline figures, verdict and alerts as Prometheus series")
    webhooks: list[Webhook] = Field(default_factory=new_list,
                                    description="POST the run's summary as JSON to each")
    tags: list[OneLine] = Field(
        default_factory=new_list,
        description="publish only runs with one of these tags (e.g. [nightly]: someone's "
        "ad-hoc run does not replace the nightly figures); default: every run")

    def wants(self, run_tags: Sequence[str]) -> bool:
        """Whether a run with ``run_tags`` is published when it ends."""
        return not self.tags or bool(set(self.tags) & set(run_tags))
