"""Content Library through the vSphere Automation REST API (``/rest/com/vmware/...``).

This is the API shape vCenter 6.5 to 8.0 serves (8.0 also serves ``/api/...``; the
``/rest`` form is the one every version in that range and govmomi's vcsim answer):

* a session is created by ``POST /rest/com/vmware/cis/session`` with basic
  authentication and then carried in the ``vmware-api-session-id`` header (we ask for
  header authentication with ``vmware-use-header-authn: true``, so no cookie jar);
* every answer is ``{"value": ...}``; errors are ``{"type": <vAPI error>, "value":
  {"messages": [...]}}``;
* object ids are path segments ``id:<uuid>``, actions are ``?~action=<verb>``
  (the VM-template service alone uses ``/rest/vcenter/vm-template/...`` and ``?action=``).

TLS uses the same settings as the lab's vCenter entry (:func:`connection.tls_context`:
CA file, pinned thumbprint or insecure). Byte transfers (update and download sessions)
live in :mod:`content_library_transfer`, deploy and capture in
:mod:`content_library_deploy`.

Where only the simulator was verified: vcsim v0.46 implements the same paths, but a
subscribed library only "sees" a publisher in the same simulator (and shares its items
rather than copying them), sync copies no bytes, and NFS/SMB storage backings are not
implemented (vcsim needs a datastore backing). Those paths follow the documented API.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vbench.errors import LabError
from vbench.lazy import lazy_module
from vbench.vsphere.connection import VCenterTarget, tls_context

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy_module("httpx")

REST = "/rest"
SESSION = "/rest/com/vmware/cis/session"
LIBRARY = "/rest/com/vmware/content/library"
LOCAL_LIBRARY = "/rest/com/vmware/content/local-library"
SUBSCRIBED_LIBRARY = "/rest/com/vmware/content/subscribed-library"
ITEM = "/rest/com/vmware/content/library/item"
SUBSCRIBED_ITEM = "/rest/com/vmware/content/library/subscribed-item"
ITEM_FILE = "/rest/com/vmware/content/library/item/file"
SESSION_HEADER = "vmware-api-session-id"


class ContentLibraryError(LabError):
    """A Content Library call failed; the message names the vCenter, the call and why."""


class NotFound(ContentLibraryError):
    """The library, item or session a call named does not exist (HTTP 404)."""


@dataclass(frozen=True)
class Backing:
    """Where a library keeps its files: a datastore (by managed object id), or a
    storage URI (``nfs://server/path``, ``smb://server/share``) for an NFS/SMB backing."""

    datastore_id: str | None = None
    storage_uri: str | None = None

    def spec(self) -> dict[str, str]:
        if self.datastore_id:
            return {"type": "DATASTORE", "datastore_id": self.datastore_id}
        if self.storage_uri:
            return {"type": "OTHER", "storage_uri": self.storage_uri}
        raise ValueError("a backing needs a datastore id or a storage uri")


@dataclass(frozen=True)
class Library:
    id: str
    name: str
    type: str  # LOCAL | SUBSCRIBED
    publish_url: str | None = None
    published: bool = False
    subscription_url: str | None = None
    last_sync_time: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class ItemFile:
    name: str
    size: int | None
    cached: bool | None


@dataclass(frozen=True)
class Item:
    id: str
    name: str
    type: str
    library_id: str
    cached: bool | None
    size: int | None  # vcsim never sets it: sum the files' sizes instead


def _message(body: Any) -> str:
    """The human part of a vAPI error body (``value.messages[].default_message``)."""
    if not isinstance(body, dict):
        return ""
    value = body.get("value")
    kind = str(body.get("type", "")).rsplit(".", 1)[-1]
    texts: list[str] = []
    if isinstance(value, dict):
        for m in value.get("messages") or []:
            if isinstance(m, dict) and m.get("default_message"):
                texts.append(str(m["default_message"]))
            elif isinstance(m, str):
                texts.append(m)
    text = "; ".join(texts)
    return f"{kind}: {text}" if kind and text else kind or text


class RestSession:
    """One authenticated REST session to one vCenter, shared by the threads of a run.

    httpx's client pools connections and is thread-safe; the session id is re-created
    once when vCenter answers 401 to a call (idle timeout, or an administrator ended it).
    """

    def __init__(self, target: VCenterTarget, *, pool_size: int = 16) -> None:
        self.target = target
        self.base = f"https://{target.host}:{target.port}"
        # One context for every connection of the session (REST calls and transfers):
        # making one loads the system's CA store, about 16 ms.
        self.tls = tls_context(target)
        limits = httpx.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        self.http = httpx.Client(
            base_url=self.base,
            verify=self.tls,
            timeout=httpx.Timeout(target.timeout, connect=target.timeout),
            limits=limits,
            headers={"vmware-use-header-authn": "true", "Accept": "application/json"},
        )
        self._session_id: str | None = None
        self._lock = threading.Lock()
        self._generation = 0

    # --- session -------------------------------------------------------------------------
    @property
    def label(self) -> str:
        return self.target.label

    @property
    def session_id(self) -> str:
        if self._session_id is None:
            self.login()
        assert self._session_id is not None
        return self._session_id

    def headers(self) -> dict[str, str]:
        return {SESSION_HEADER: self.session_id}

    def login(self) -> None:
        try:
            r = self.http.post(SESSION, auth=(self.target.user, self.target.password))
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if r.status_code == 401:
            raise ContentLibraryError(
                self.label,
                f"login failed for user {self.target.user!r}: wrong user name or "
                "password (REST session refused)",
            )
        if r.status_code >= 400:
            raise ContentLibraryError(self.label, f"REST login answered HTTP {r.status_code}")
        self._session_id = str(r.json()["value"])
        self._generation += 1

    def _relogin(self, generation: int) -> None:
        with self._lock:
            if self._generation == generation:
                self.login()

    def close(self) -> None:
        """End the session on vCenter (sessions count against its limit) and the pool."""
        if self._session_id is not None:
            # closing anyway on failure: vCenter expires idle sessions itself
            with contextlib.suppress(httpx.HTTPError):
                self.http.delete(SESSION, headers=self.headers())
            self._session_id = None
        self.http.close()

    def __enter__(self) -> RestSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- calls ---------------------------------------------------------------------------
    def _transport_error(self, exc: httpx.HTTPError) -> ContentLibraryError:
        cause = exc.__cause__ or exc.__context__ or exc
        if isinstance(exc, httpx.ConnectError) and "refused" in str(exc).lower():
            start = f" (run: {self.target.start_hint})" if self.target.start_hint else ""
            return ContentLibraryError(self.label, f"cannot connect: connection refused{start}")
        if isinstance(exc, httpx.TimeoutException):
            return ContentLibraryError(self.label, f"no answer within {self.target.timeout:g}s")
        return ContentLibraryError(self.label, f"{type(exc).__name__}: {cause}")

    def call(
        self,
        method: str,
        path: str,
        *,
        action: str | None = None,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        what: str = "",
    ) -> Any:
        """One REST call; returns ``value`` of the answer (``None`` when there is none)."""
        query = dict(params or {})
        if action:
            query["~action"] = action
        for attempt in (0, 1):
            generation = self._generation
            try:
                r = self.http.request(method, path, params=query, json=body, headers=self.headers())
            except httpx.HTTPError as exc:
                raise self._transport_error(exc) from None
            if r.status_code == 401 and attempt == 0:
                self._relogin(generation)
                continue
            return self._value(r, what or f"{method} {path}")
        raise AssertionError("unreachable")

    def _value(self, r: httpx.Response, what: str) -> Any:
        if r.status_code < 300:
            if not r.content:
                return None
            return r.json().get("value")
        try:
            detail = _message(r.json())
        except ValueError:
            detail = ""
        cls = NotFound if r.status_code == 404 else ContentLibraryError
        reason = detail or f"HTTP {r.status_code}"
        if r.status_code == 404 and not detail:
            reason = "not found"
        raise cls(self.label, f"{what}: {reason}")


def session_for(target: VCenterTarget, **kw: Any) -> RestSession:
    """A logged-in REST session (failures are one line naming the vCenter)."""
    s = RestSession(target, **kw)
    try:
        s.login()
    except BaseException:
        s.http.close()
        raise
    return s


def client_token() -> str:
    """Makes a create idempotent on a real vCenter if the request has to be retried."""
    return str(uuid.uuid4())


# --- libraries ------------------------------------------------------------------------------
def _library(v: Mapping[str, Any]) -> Library:
    pub = v.get("publish_info") or {}
    sub = v.get("subscription_info") or {}
    return Library(
        id=str(v["id"]),
        name=str(v.get("name", "")),
        type=str(v.get("type", "")),
        publish_url=pub.get("publish_url") or None,
        published=bool(pub.get("published")),
        subscription_url=sub.get("subscription_url") or None,
        last_sync_time=v.get("last_sync_time"),
        raw=dict(v),
    )


def find_libraries(s: RestSession, name: str) -> list[str]:
    return list(s.call("POST", LIBRARY, action="find", body={"spec": {"name": name}}) or [])


def library_by_name(s: RestSession, name: str) -> Library:
    ids = find_libraries(s, name)
    if not ids:
        raise NotFound(s.label, f"no content library named {name!r}")
    if len(ids) > 1:
        raise ContentLibraryError(s.label, f"{len(ids)} content libraries are named {name!r}")
    return get_library(s, ids[0])


def get_library(s: RestSession, library_id: str) -> Library:
    v = s.call("GET", f"{LIBRARY}/id:{library_id}", what=f"library {library_id}")
    return _library(v)


def publish_spec(user: str | None = None, password: str | None = None) -> dict[str, Any]:
    """``publish_info``: published, with basic authentication when a password is given
    (vCenter's publisher user name is always ``vcsp``)."""
    if password:
        return {
            "published": True,
            "authentication_method": "BASIC",
            "user_name": user or "vcsp",
            "password": password,
        }
    return {"published": True, "authentication_method": "NONE"}


def create_local_library(
    s: RestSession,
    name: str,
    backing: Backing,
    *,
    publish: Mapping[str, Any] | None = None,
    description: str = "",
    token: str | None = None,
) -> str:
    spec: dict[str, Any] = {
        "name": name,
        "description": description,
        "type": "LOCAL",
        "storage_backings": [backing.spec()],
    }
    if publish:
        spec["publish_info"] = dict(publish)
    body = {"create_spec": spec, "client_token": token or client_token()}
    return str(s.call("POST", LOCAL_LIBRARY, body=body, what=f"create library {name!r}"))


def create_subscribed_library(
    s: RestSession,
    name: str,
    backing: Backing,
    subscription_url: str,
    *,
    on_demand: bool = True,
    automatic_sync: bool = False,
    user: str | None = None,
    password: str | None = None,
    ssl_thumbprint: str | None = None,
    token: str | None = None,
) -> str:
    sub: dict[str, Any] = {
        "subscription_url": subscription_url,
        "on_demand": on_demand,
        "automatic_sync_enabled": automatic_sync,
        "authentication_method": "BASIC" if password else "NONE",
    }
    if password:
        sub.update(user_name=user or "vcsp", password=password)
    if ssl_thumbprint:
        sub["ssl_thumbprint"] = ssl_thumbprint
    spec = {
        "name": name,
        "type": "SUBSCRIBED",
        "storage_backings": [backing.spec()],
        "subscription_info": sub,
    }
    body = {"create_spec": spec, "client_token": token or client_token()}
    return str(s.call("POST", SUBSCRIBED_LIBRARY, body=body, what=f"subscribe {name!r}"))


def publish_library(s: RestSession, library_id: str, publish: Mapping[str, Any]) -> Library:
    """Turn publishing on for an existing local library; returns it with its publish URL.

    The update is read back: vcsim v0.46 accepts the PATCH but ignores ``publish_info``
    (it publishes only at creation), and a server that did not publish must not pass
    for one that did."""
    body = {"update_spec": {"publish_info": dict(publish)}}
    s.call("PATCH", f"{LOCAL_LIBRARY}/id:{library_id}", body=body, what="publish library")
    lib = get_library(s, library_id)
    if not lib.published:
        raise ContentLibraryError(
            s.label,
            f"publish library {lib.name!r}: the update was accepted but the library is still "
            "not published (vcsim publishes only at creation: create it with publish: true)",
        )
    return lib


def push_to_subscribers(s: RestSession, library_id: str) -> None:
    """``~action=publish``: push the library's VM templates to its subscribers (vCenter
    6.7 U2+ subscriptions)."""
    s.call("POST", f"{LOCAL_LIBRARY}/id:{library_id}", action="publish", body={})


def delete_library(s: RestSession, library_id: str, *, subscribed: bool) -> None:
    base = SUBSCRIBED_LIBRARY if subscribed else LOCAL_LIBRARY
    s.call("DELETE", f"{base}/id:{library_id}", what=f"delete library {library_id}")


def sync_library(s: RestSession, library_id: str) -> None:
    """Ask a subscribed library to synchronise (vCenter runs it in the background:
    completion is observed through the items, see :func:`wait_synced`)."""
    s.call("POST", f"{SUBSCRIBED_LIBRARY}/id:{library_id}", action="sync", what="sync library")


def sync_item(s: RestSession, item_id: str, *, force_content: bool = True) -> None:
    s.call(
        "POST",
        f"{SUBSCRIBED_ITEM}/id:{item_id}",
        action="sync",
        body={"force_sync_content": force_content},
        what=f"sync item {item_id}",
    )


# --- items ----------------------------------------------------------------------------------
def _item(v: Mapping[str, Any]) -> Item:
    return Item(
        id=str(v["id"]),
        name=str(v.get("name", "")),
        type=str(v.get("type", "")),
        library_id=str(v.get("library_id", "")),
        cached=v.get("cached"),
        size=v.get("size") or None,
    )


def list_items(s: RestSession, library_id: str) -> list[str]:
    v = s.call("GET", ITEM, params={"library_id": library_id}, what="list items")
    return list(v or [])


def get_item(s: RestSession, item_id: str) -> Item:
    return _item(s.call("GET", f"{ITEM}/id:{item_id}", what=f"item {item_id}"))


def iter_items(s: RestSession, library_id: str) -> Iterator[Item]:
    for item_id in list_items(s, library_id):
        yield get_item(s, item_id)


def item_files(s: RestSession, item_id: str) -> list[ItemFile]:
    v = s.call("GET", ITEM_FILE, params={"library_item_id": item_id}, what="list item files")
    return [
        ItemFile(str(f["name"]), f.get("size"), f.get("cached")) for f in (v or []) if "name" in f
    ]


def item_bytes(s: RestSession, item_id: str) -> int | None:
    """Bytes an item holds: the sum of its files' sizes (the item's own ``size`` is not
    filled in by every server); None when the server does not say the size of a file."""
    sizes = [f.size for f in item_files(s, item_id)]
    if any(size is None for size in sizes):
        return None
    return sum(size for size in sizes if size is not None)


def find_item(s: RestSession, library_id: str, name: str) -> str | None:
    body = {"spec": {"library_id": library_id, "name": name}}
    ids = s.call("POST", ITEM, action="find", body=body, what=f"find item {name!r}") or []
    return str(ids[0]) if ids else None


def create_item(
    s: RestSession, library_id: str, name: str, kind: str = "file", token: str | None = None
) -> str:
    """A new, empty item (``kind``: ovf, iso, file...); its files come from an update session."""
    body = {
        "create_spec": {"library_id": library_id, "name": name, "type": kind},
        "client_token": token or client_token(),
    }
    return str(s.call("POST", ITEM, body=body, what=f"create item {name!r}"))


def delete_item(s: RestSession, item_id: str) -> None:
    s.call("DELETE", f"{ITEM}/id:{item_id}", what=f"delete item {item_id}")
