"""Parameters of the ``content_library`` driver (pure: no REST, no pyVmomi).

A trial runs ``steps`` in order; each step is one operation kind on one library:

- ``create_library``: a local library on a datastore (``datastore``, default: the
  profile's) or an NFS/SMB storage URI (``storage_uri``), optionally ``publish``-ed
  (with ``password``: publisher basic authentication); or ``existing: true`` to use a
  library of that name as it is (never modified, never removed);
- ``publish``: publish a library this run created (a real vCenter; vcsim publishes only
  at creation);
- ``subscribe``: a subscribed library on ``vcenter`` (another vCenter of the lab, or the
  same) to ``publisher`` (a library of an earlier step), ``on_demand`` or immediate;
- ``sync``: synchronise a subscribed library (or its ``item``), time to the server's
  ``last_sync_time``; then the honesty check (items and, for immediate download, bytes);
- ``import``: ``count`` items into a library, generated at ``size`` bytes, or made of
  ``files`` (local paths uploaded into each item: an OVF with its disks, an ISO…), or
  pulled by vCenter from ``url`` (a web server in the lab);
- ``export``: download every file of ``count`` items (default: all), counted, optionally
  checksummed against the import;
- ``deploy``: ``count`` VMs from ``item`` (an OVF or VM-template item), optionally
  powered on;
- ``capture``: a VM (``vm``, by name; it is read, not changed) into a VM-template item.

``concurrency`` operations of one step are in flight at once (1..10 in the study).
``items``, ``item_size`` and ``concurrency`` at the top are defaults of the steps, and
what factors vary: ``factors: {concurrency: [1, 2, 4, 8]}``.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from vbench.config.types import Duration, new_list, text_problem
from vbench.workloads.base import Finding, LabObject, Params, Strict

OPS = (
    "create_library",
    "publish",
    "subscribe",
    "sync",
    "import",
    "export",
    "deploy",
    "capture",
)
Op = Literal[
    "create_library", "publish", "subscribe", "sync", "import", "export", "deploy", "capture"
]
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_SIZE = 64 << 40  # the largest virtual disk vSphere makes is 62 TB


def parse_size(value: Any) -> int:
    """``64m``, ``1g``, ``4096`` (binary units) -> bytes."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or e.g. 64m, 1g")
    if isinstance(value, int):
        n = value
    else:
        text = str(value).strip().lower().removesuffix("ib").removesuffix("b")
        unit = text[-1:] if text[-1:] in _UNITS and not text[-1:].isdigit() else ""
        number = text[: len(text) - len(unit)] if unit else text
        try:
            n = int(float(number) * _UNITS[unit])
        except (ValueError, OverflowError):  # not a number, or nan/inf
            raise ValueError(f"{value!r} is not a size (e.g. 4096, 64m, 1g)") from None
    if n < 1:
        raise ValueError("a size must be at least 1 byte")
    if n > MAX_SIZE:  # generated on the controller and uploaded: no item is this large
        raise ValueError("a size of more than 64 TiB (the largest taken)")
    return n


class Target(Strict):
    """Where deployed VMs go (names in the point's vCenter; default: the profile's)."""

    cluster: str | None = Field(None, description="cluster (its root resource pool)")
    host: str | None = Field(None, description="host (and its pool)")
    resource_pool: str | None = Field(None, description="resource pool")
    folder: str | None = Field(None, description="VM folder (default: the datacenter's)")
    datastore: str | None = Field(None, description="datastore of the VM's files")


class Step(Strict):
    """One operation of the trial (see the module docstring for each kind)."""

    op: Op = Field(description="operation: " + ", ".join(OPS))
    label: str | None = Field(
        None,
        pattern=r"^[A-Za-z][A-Za-z0-9_]*$",
        description="the step's name: its figures are <label>_time, <label>_throughput… "
        "(default: the op; give steps of the same op distinct labels)",
    )
    library: str = Field(description="library name in this scenario (prefixed per run)")
    vcenter: str | None = Field(None, description="vCenter (default: the point's)")
    # create_library / subscribe
    datastore: str | None = Field(None, description="backing datastore")
    storage_uri: str | None = Field(None, description="NFS/SMB backing (nfs://…, smb://…)")
    publish: bool = Field(False, description="create_library: publish it")
    existing: bool = Field(False, description="create_library: use an existing library as is")
    password: str | None = Field(
        None, description="publisher basic-auth password (a secret reference: ${env:…})"
    )
    publisher: str | None = Field(None, description="subscribe: the published library")
    on_demand: bool = Field(True, description="subscribe: download content on demand")
    # transfers
    count: int | None = Field(None, ge=1, le=1000, description="items (or VMs) per step")
    size: str | int | None = Field(None, description="import: generated item size (64m, 1g)")
    files: list[str] = Field(
        default_factory=new_list,
        description="import: local files of one item (an OVF and its disks, an ISO...)",
    )
    url: str | None = Field(None, description="import: http(s) URL vCenter pulls from")
    kind: str = Field("file", description="import: item type (file, iso, ovf)")
    checksum: bool = Field(False, description="export: SHA-256 checked against the import")
    concurrency: int | None = Field(None, ge=1, le=10, description="ops in flight at once")
    # sync
    item: str | None = Field(None, description="sync/deploy: one item (by name)")
    timeout: Duration = Field(600.0, description="longest wait for the step's operations")
    # deploy / capture
    target: Target = Field(default_factory=Target, description="deploy/capture placement")
    powered_on: bool = Field(False, description="deploy: power the VMs on")
    vm: str | None = Field(None, description="capture: the VM to capture (read only)")

    @field_validator("library", "publisher", "item", "vm")
    @classmethod
    def _object_name(cls, v: str | None) -> str | None:
        # Library, item and VM names become vCenter object names (a library's and an
        # item's also folders on its datastore): one line, no path of their own.
        if v is None:
            return v
        if not v.strip():
            raise ValueError("an empty name")
        # text_problem, as report titles: C1 controls and bidi overrides too, since
        # these names are printed on terminals.
        problem = text_problem(v)
        if problem:
            raise ValueError(f"a name cannot hold a {problem}")
        if "/" in v or "\\" in v or v.strip(".") == "":
            raise ValueError(f"{v!r} is not a plain name: no '/', '\\' and not '.' or '..'")
        return v

    @field_validator("size")
    @classmethod
    def _size(cls, v: Any) -> Any:
        if v is not None:
            parse_size(v)
        return v

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("url must be http:// or https://")
        return v

    @model_validator(mode="after")
    def _needs(self) -> Step:
        need = {
            "subscribe": ("publisher",),
            "deploy": ("item",),
            "capture": ("vm",),
        }.get(self.op, ())
        for key in need:
            if getattr(self, key) in (None, ""):
                raise ValueError(f"{self.op} needs `{key}`")
        if self.op == "import" and sum(map(bool, (self.files, self.url))) > 1:
            raise ValueError("import takes `files` or `url`, not both")
        if self.datastore and self.storage_uri:
            raise ValueError("a library is backed by `datastore` or `storage_uri`, not both")
        if self.storage_uri and not self.storage_uri.startswith(("nfs://", "smb://")):
            raise ValueError("storage_uri must be nfs://… or smb://…")
        return self

    @property
    def name(self) -> str:
        return self.label or self.op


class ContentLibraryParams(Params):
    """A Content Library study: steps timed through the vSphere REST API."""

    steps: list[Step] = Field(min_length=1, description="operations, in order")
    items: int = Field(1, ge=1, le=1000, description="default `count` of import steps")
    item_size: str | int = Field("64m", description="default size of generated items")
    concurrency: int = Field(1, ge=1, le=10, description="default ops in flight per step")
    datastore: str | None = Field(None, description="default backing datastore")
    storage_uri: str | None = Field(
        None, description="default NFS/SMB backing of create_library (nfs://…, smb://…)"
    )
    subscriber_vcenter: str | None = Field(
        None, description="default vCenter of subscribe steps (a factor: one vs two vCenters)"
    )
    subscriber_datastore: str | None = Field(None, description="default subscriber datastore")
    subscriber_storage_uri: str | None = Field(
        None, description="default NFS/SMB backing of subscribe steps"
    )
    keep_exports: bool = Field(
        False, description="keep exported files in the run directory (default: counted only)"
    )

    @field_validator("item_size")
    @classmethod
    def _item_size(cls, v: Any) -> Any:
        parse_size(v)
        return v

    @field_validator("storage_uri", "subscriber_storage_uri")
    @classmethod
    def _uri(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("nfs://", "smb://")):
            raise ValueError("a storage URI is nfs://… or smb://…")
        return v

    @model_validator(mode="after")
    def _libraries_known(self) -> ContentLibraryParams:
        made: set[str] = set()
        named: dict[str, int] = {}
        for i, step in enumerate(self.steps):
            if step.name in named:
                raise ValueError(
                    f"steps[{i}]: steps[{named[step.name]}] is also named {step.name!r}: give "
                    "steps of the same op distinct `label`s (their figures are named by it)"
                )
            named[step.name] = i
            if step.op in ("create_library", "subscribe"):
                if step.library in made:
                    raise ValueError(f"steps[{i}]: library {step.library!r} is created twice")
                made.add(step.library)
                continue
            if step.library not in made:
                raise ValueError(
                    f"steps[{i}]: {step.op} of library {step.library!r} before any "
                    "create_library/subscribe step makes it"
                )
            if step.publisher and step.publisher not in made:
                raise ValueError(f"steps[{i}]: publisher {step.publisher!r} is not created")
        return self

    def count(self, step: Step) -> int:
        return step.count or (1 if step.files or step.url else self.items)

    def size(self, step: Step) -> int:
        return parse_size(step.size if step.size is not None else self.item_size)

    def concurrency_of(self, step: Step) -> int:
        return step.concurrency or self.concurrency


def findings(p: ContentLibraryParams) -> list[Finding]:
    """Steps that would change what the scenario says exists, or measure nothing."""
    out: list[Finding] = []
    existing = {s.library for s in p.steps if s.op == "create_library" and s.existing}
    for i, s in enumerate(p.steps):
        where = f"steps[{i}]"
        if s.library in existing and s.op in ("import", "publish", "capture", "sync"):
            out.append(
                Finding(
                    "error",
                    where,
                    f"{s.op} would modify existing library "
                    f"{s.library!r}: vbench never changes what it did not create",
                )
            )
        if s.op == "create_library" and s.existing and (s.publish or s.storage_uri):
            out.append(
                Finding(
                    "error",
                    where,
                    "an existing library is used as it is: publish/storage_uri do not apply",
                )
            )
        if s.op == "subscribe" and s.publisher in existing:
            out.append(
                Finding(
                    "warning",
                    where,
                    "subscribing to an existing library: its "
                    "publish settings (and password) must already allow it",
                )
            )
    return out + item_findings(p)


def item_findings(p: ContentLibraryParams) -> list[Finding]:
    """A sync, export or deploy of an `item` no earlier step puts in its library (an
    import names its items after the step, a capture its template; a subscribed library
    holds its publisher's): refused with the closest item name, before anything runs.
    An existing library's items are the lab's (checked by preflight)."""
    held: dict[str, list[str] | None] = {}  # library -> its item names (None: unknown)
    publisher: dict[str, str] = {}  # subscribed library -> the library it follows
    out: list[Finding] = []
    for i, s in enumerate(p.steps):
        if s.op == "create_library":
            held[s.library] = None if s.existing else []
        elif s.op == "subscribe":
            publisher[s.library] = s.publisher or ""
        if s.op == "subscribe" or (s.op == "sync" and s.library in publisher):
            # A copy: a subscriber holds what its publisher had at its last sync, not
            # an item put in the publisher after it.
            got = held.get(publisher[s.library])
            held[s.library] = None if got is None else list(got)
        items = held.get(s.library)
        if items is None:
            continue
        if s.op == "import":
            n = p.count(s)
            items += [s.name] if n == 1 else [f"{s.name}-{len(items) + k}" for k in range(n)]
        elif s.op == "capture":
            items.append(s.name)
        elif s.op in ("sync", "export", "deploy") and s.item and s.item not in items:
            out.append(Finding("error", f"steps.{i}.item", _no_item(s, items)))
    return out


def _no_item(s: Step, items: list[str]) -> str:
    close = difflib.get_close_matches(s.item or "", items, n=1)
    known = f"its items: {', '.join(items)}" if items else "it holds no item yet"
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"{s.op} of item {s.item!r}: no step before it puts that item in library "
            f"{s.library!r} ({known}){hint}")


def _step_vcenter(p: ContentLibraryParams, i: int, step: Step) -> tuple[str | None, str | None]:
    """A step's vCenter (None: the point's) and where the scenario names it (as the run
    picks it: ops.TrialRun.vc)."""
    if step.vcenter:
        return step.vcenter, f"steps.{i}.vcenter"
    if step.op == "subscribe" and p.subscriber_vcenter:
        return p.subscriber_vcenter, "subscriber_vcenter"
    return None, None


def _backing_datastore(p: ContentLibraryParams, i: int, step: Step) -> tuple[str, str] | None:
    """The datastore a create_library or subscribe step backs its library with, and where
    it is named (the profile's is the lab's: checked by `lab check`'s profiles)."""
    sub = step.op == "subscribe"
    if step.existing or step.storage_uri or (p.subscriber_storage_uri if sub else p.storage_uri):
        return None
    if step.datastore:
        return step.datastore, f"steps.{i}.datastore"
    if sub and p.subscriber_datastore:
        return p.subscriber_datastore, "subscriber_datastore"
    return (p.datastore, "datastore") if p.datastore else None


def lab_objects(p: ContentLibraryParams) -> tuple[LabObject, ...]:
    """Every vCenter object the steps name: backing datastores, existing libraries (and
    the items deployed from them), the VM a capture reads, and deploy/capture targets."""
    out: list[LabObject] = []
    existing = {s.library for s in p.steps if s.op == "create_library" and s.existing}
    filled = {s.library for s in p.steps if s.op in ("import", "capture")}
    for i, step in enumerate(p.steps):
        vc, where = _step_vcenter(p, i, step)
        named: list[tuple[str, str, str, str | None]] = []
        if step.op in ("create_library", "subscribe"):
            ds = _backing_datastore(p, i, step)
            named += [("datastore", ds[0], ds[1], None)] if ds else []
        if step.op == "create_library" and step.existing:
            named.append(("library", step.library, f"steps.{i}.library", None))
        if step.op == "deploy" and step.item and step.library in existing - filled:
            named.append(("library_item", step.item, f"steps.{i}.item", step.library))
        if step.op == "capture" and step.vm:
            named.append(("vm", step.vm, f"steps.{i}.vm", None))
        if step.op in ("deploy", "capture"):
            named += [(k, getattr(step.target, k), f"steps.{i}.target.{k}", None)
                      for k in ("cluster", "host", "resource_pool", "folder", "datastore")
                      if getattr(step.target, k)]  # fmt: skip
        out += [LabObject(kind, name, path, vc, library=lib, vcenter_path=where)
                for kind, name, path, lib in named]  # fmt: skip
    return tuple(out)
