"""One trial of the ``content_library`` driver: the steps, run through the REST client.

Every object is journaled before the call that creates it (``res.creating``) and
removed by :meth:`TrialRun.remove_created` in reverse order at teardown; whatever a
crash leaves is removed by the run's cleanup or ``vbench cleanup RUN`` through the
destroyers of :mod:`.destroyers`. Libraries named as ``existing`` are only read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vbench.config.secrets import resolve_secret
from vbench.errors import Interrupted, LabError
from vbench.vsphere import content_library as cl
from vbench.vsphere import content_library_deploy as dp
from vbench.vsphere import content_library_transfer as tr
from vbench.workloads.base import TrialContext
from vbench.workloads.content_library.destroyers import (
    ITEM_KIND,
    LIBRARY_KIND,
    SESSION_KIND,
    VM_DEPLOYED_KIND,
)
from vbench.workloads.content_library.params import ContentLibraryParams, Step

PLUGIN = "content_library"


class SyncShort(LabError):
    """A sync that reported success while the subscriber holds less than the publisher."""


@dataclass
class ItemState:
    id: str
    name: str
    bytes: int | None = 0  # None: the server did not say
    sha256: str | None = None


@dataclass
class LibState:
    id: str
    name: str  # in vCenter
    vcenter: str
    subscribed: bool = False
    existing: bool = False
    on_demand: bool = True
    publish_password: str | None = None
    publisher: str | None = None  # the scenario's name of a subscribed library's publisher
    items: dict[str, ItemState] = field(default_factory=dict)


@dataclass(frozen=True)
class OpRecord:
    """One operation as measured: controller monotonic times, bytes, outcome."""

    step: str
    op: str
    index: int
    start: float
    end: float
    bytes: int | None = 0  # None: not known (a sync whose server gives no file sizes)
    overhead: float | None = None  # transfer complete -> op recorded (s)
    error: str | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Batch:
    step: str
    op: str
    start: float
    end: float
    records: tuple[OpRecord, ...]
    extra: tuple[tuple[str, float, str], ...] = ()  # (metric, value, unit)


class _JournalSessions(tr.SessionLog):
    """Update/download sessions journaled like every other object (kind cl_session)."""

    def __init__(self, run: TrialRun, vcenter: str) -> None:
        self.run, self.vcenter = run, vcenter

    def intent(self, kind: str, item_id: str) -> Any:
        name = self.run.unique(f"{kind}-session")
        return self.run.res.track(
            SESSION_KIND,
            name,
            vcenter=self.vcenter,
            data={"type": kind, "item": item_id},
            plugin=PLUGIN,
        )

    def created(self, token: Any, session_id: str) -> None:
        token.created(session_id)

    def removed(self, token: Any) -> None:
        if token.result is not None:
            self.run.journal.write(
                "destroyed",
                vcenter=token.vcenter,
                name=token.name,
                kind=token.kind,
                moid=token.result.moid,
            )


class TrialRun:
    """The state of one trial: sessions, libraries, what was created, what was measured."""

    def __init__(self, ctx: TrialContext, params: ContentLibraryParams) -> None:
        if ctx.vsphere is None:
            raise LabError(
                "content_library",
                "needs a vCenter: the lab names none (add one under `vcenters:`, or use "
                "examples/labs/sim.yaml)",
            )
        self.ctx, self.p, self.res = ctx, params, ctx.vsphere
        self.journal = self.res.journal
        self.tag = f"p{ctx.point}t{ctx.trial}"
        self.rest: dict[str, cl.RestSession] = {}
        self.libs: dict[str, LibState] = {}
        self.created: list[Any] = []
        self.batches: list[Batch] = []
        # Operations that finished in a step that failed: no figure, but kept in ops.csv.
        self.unfinished: list[OpRecord] = []
        self._lock = threading.Lock()
        self._counter = 0

    # --- plumbing ------------------------------------------------------------------------
    def unique(self, what: str) -> str:
        with self._lock:
            self._counter += 1
            return self.res.object_name(f"{self.tag}-{what}-{self._counter}")

    def vc(self, step: Step) -> str:
        if step.op == "subscribe":
            return step.vcenter or self.p.subscriber_vcenter or self.res.vcenter
        return step.vcenter or self.res.vcenter

    def session(self, vcenter: str) -> cl.RestSession:
        with self._lock:
            s = self.rest.get(vcenter)
        if s is None:
            target = self.res.session(vcenter).target
            s = cl.session_for(target, pool_size=max(16, 2 * self.p.concurrency))
            with self._lock:
                self.rest[vcenter] = s
        return s

    def close(self) -> None:
        for s in self.rest.values():
            s.close()
        self.rest.clear()

    def _create(
        self, kind: str, name: str, vcenter: str, data: dict[str, Any], make: Callable[[], str]
    ) -> str:
        with self.res.creating(kind, name, vcenter=vcenter, data=data, plugin=PLUGIN) as h:
            ident = make()
            created = h.created(ident)
        with self._lock:
            self.created.append(created)
        return ident

    def remove_created(self) -> list[str]:
        """Remove every object this trial created, newest first; errors as text."""
        errors: list[str] = []
        while self.created:
            obj = self.created.pop()
            try:
                self.res.destroy(obj)
            except Exception as exc:  # keep removing the rest; cleanup retries
                errors.append(f"{obj.kind} {obj.name}: {exc}")
        return errors

    def _check_cancel(self) -> None:
        if self.ctx.cancel.is_set():
            raise Interrupted("interrupted")

    # --- batches -------------------------------------------------------------------------
    def batch(
        self, step: Step, n: int, one: Callable[[int], tuple[int, float | None]]
    ) -> tuple[OpRecord, ...]:
        """Run ``one(i)`` for i < n, ``concurrency`` at a time; each returns (bytes moved,
        time the transfer completed or None). A failed op fails the step."""
        width = min(self.p.concurrency_of(step), n)

        def timed(i: int) -> OpRecord:
            self._check_cancel()
            start = time.monotonic()
            moved, transferred = one(i)
            end = time.monotonic()
            overhead = end - transferred if transferred is not None else None
            return OpRecord(step.name, step.op, i, start, end, moved, overhead)

        if width <= 1:
            done: list[OpRecord] = []
            try:
                for i in range(n):
                    done.append(timed(i))
            finally:
                if len(done) < n:
                    self.unfinished += done
            return tuple(done)
        with ThreadPoolExecutor(width, thread_name_prefix="vbench-cl") as pool:
            futures = [pool.submit(timed, i) for i in range(n)]
        failed = [f.exception() for f in futures if f.exception() is not None]
        if failed:
            self.unfinished += [f.result() for f in futures if f.exception() is None]
            raise failed[0]
        return tuple(f.result() for f in futures)

    def record(self, step: Step, records: tuple[OpRecord, ...], *extra: Any) -> None:
        start = min(r.start for r in records)
        end = max(r.end for r in records)
        self.batches.append(Batch(step.name, step.op, start, end, records, tuple(extra)))
        self.ctx.log(
            "cl_step",
            step=step.name,
            op=step.op,
            ops=len(records),
            seconds=round(end - start, 4),
            bytes=known_sum(r.bytes for r in records),
        )

    # --- steps ---------------------------------------------------------------------------
    def run_step(self, i: int, step: Step) -> None:
        self._check_cancel()
        handler = getattr(self, f"_{step.op}")
        handler(i, step)

    def _lib(self, step: Step) -> LibState:
        return self.libs[step.library]

    def _what(self, step: Step) -> str:
        """``library pub (vb-…-pub-1 in vCenter)``: the scenario's name first, as errors
        should speak of what the user wrote."""
        lib = self.libs.get(step.library)
        if lib is None or lib.name == step.library:
            return f"library {step.library}"
        return f"library {step.library} ({lib.name} in vCenter)"

    def _datastore_id(self, vcenter: str, name: str | None) -> str:
        chosen = (
            name
            or self.p.datastore
            or (self.res.placement.datastore if vcenter == self.res.vcenter else None)
        )
        if not chosen:
            raise LabError(
                f"vcenter {vcenter}",
                "a library needs a datastore: set "
                "`datastore:` in the step, the params or the lab profile",
            )
        return self.res.inventory(vcenter).find("datastore", chosen).moid

    def _backing(self, vcenter: str, step: Step) -> cl.Backing:
        sub = step.op == "subscribe"
        uri = step.storage_uri or (self.p.subscriber_storage_uri if sub else self.p.storage_uri)
        if uri:
            return cl.Backing(storage_uri=uri)
        name = step.datastore or (self.p.subscriber_datastore if sub else None)
        return cl.Backing(datastore_id=self._datastore_id(vcenter, name))

    def _create_library(self, i: int, step: Step) -> None:
        vc = self.vc(step)
        s = self.session(vc)
        if step.existing:
            lib = cl.library_by_name(s, step.library)
            st = LibState(lib.id, lib.name, vc, lib.type == "SUBSCRIBED", existing=True)
            for it in cl.iter_items(s, lib.id):
                st.items[it.name] = ItemState(it.id, it.name, cl.item_bytes(s, it.id))
            self.libs[step.library] = st
            return
        name = self.unique(step.library)
        password = (
            resolve_secret(step.password, f"workload.params.steps[{i}].password")
            if step.password
            else None
        )
        publish = cl.publish_spec(password=password) if step.publish else None
        backing = self._backing(vc, step)

        def make() -> str:
            return cl.create_local_library(s, name, backing, publish=publish)

        start = time.monotonic()
        lib_id = self._create(LIBRARY_KIND, name, vc, {"subscribed": False}, make)
        end = time.monotonic()
        self.libs[step.library] = LibState(lib_id, name, vc, publish_password=password)
        self.record(step, (OpRecord(step.name, step.op, 0, start, end),))

    def _publish(self, i: int, step: Step) -> None:
        lib = self._lib(step)
        start = time.monotonic()
        cl.publish_library(self.session(lib.vcenter), lib.id, cl.publish_spec())
        self.record(step, (OpRecord(step.name, step.op, 0, start, time.monotonic()),))

    def _subscribe(self, i: int, step: Step) -> None:
        pub = self.libs[step.publisher or ""]
        url = cl.get_library(self.session(pub.vcenter), pub.id).publish_url
        if not url:
            raise LabError(
                f"library {pub.name}",
                "is not published: subscribe needs a create_library step with publish: true",
            )
        vc = self.vc(step)
        s = self.session(vc)
        name = self.unique(step.library)
        backing = self._backing(vc, step)
        thumb = self.res.session(pub.vcenter).target.thumbprint if pub.vcenter != vc else None

        def make() -> str:
            return cl.create_subscribed_library(
                s,
                name,
                backing,
                url,
                on_demand=step.on_demand,
                password=pub.publish_password,
                ssl_thumbprint=thumb,
            )

        start = time.monotonic()
        lib_id = self._create(LIBRARY_KIND, name, vc, {"subscribed": True}, make)
        end = time.monotonic()
        self.libs[step.library] = LibState(
            lib_id, name, vc, subscribed=True, on_demand=step.on_demand, publisher=step.publisher
        )
        self.record(step, (OpRecord(step.name, step.op, 0, start, end),))
        self.ctx.log(
            "cl_subscribed",
            library=name,
            publisher=pub.name,
            url=url,
            vcenter=vc,
            publisher_vcenter=pub.vcenter,
        )

    def _import(self, i: int, step: Step) -> None:
        lib = self._lib(step)
        s = self.session(lib.vcenter)
        n = self.p.count(step)
        size = self.p.size(step)
        log = _JournalSessions(self, lib.vcenter)
        base = len(lib.items)

        def one(k: int) -> tuple[int, float | None]:
            item_name = f"{step.name}-{base + k}" if n > 1 else step.name
            kind = "ovf" if any(f.endswith(".ovf") for f in step.files) else step.kind
            item_id = self._create(
                ITEM_KIND,
                item_name,
                lib.vcenter,
                {"library_id": lib.id},
                lambda: cl.create_item(s, lib.id, item_name, kind),
            )
            done = tr.import_files(
                s,
                item_id,
                lambda sid: self._transfers(s, sid, step, k, size),
                timeout=step.timeout,
                log=log,
            )
            moved = sum(t.bytes for t in done)
            with self._lock:
                lib.items[item_name] = ItemState(item_id, item_name, moved, done[0].sha256)
            return moved, max(t.ended for t in done)

        self.record(step, self.batch(step, n, one))

    def _transfers(
        self, s: cl.RestSession, sid: str, step: Step, k: int, size: int
    ) -> list[tr.Transfer]:
        """The files of one item: pulled from ``url``, uploaded from ``files`` (an OVF
        and its disks go into one item), or ``size`` generated bytes."""
        if step.url:
            name = step.url.rstrip("/").rsplit("/", 1)[-1].split("?")[0] or "file"
            return [tr.pull(s, sid, name, step.url, timeout=step.timeout)]
        if step.files:
            paths = [Path(f).expanduser() for f in step.files]
            return [tr.push(s, sid, tr.Source(p.name, p)) for p in paths]
        seed = hash((self.ctx.run_id, self.tag, step.name, k)) & 0xFFFF
        return [tr.push(s, sid, tr.Source(f"{step.name}.bin", size=size, seed=seed))]

    def _export(self, i: int, step: Step) -> None:
        lib = self._lib(step)
        s = self.session(lib.vcenter)
        items = list(lib.items.values())
        if not items:  # e.g. a library subscribed in this trial: its items come from vCenter
            items = [ItemState(it.id, it.name) for it in cl.iter_items(s, lib.id)]
        if step.item:
            items = [it for it in items if it.name == step.item]
        if not items:
            raise LabError(self._what(step), "has no items to export")
        n = step.count or len(items)
        log = _JournalSessions(self, lib.vcenter)
        keep = self.ctx.raw_dir / "exports" if self.p.keep_exports else None

        def one(k: int) -> tuple[int, float | None]:
            it = items[k % len(items)]
            dest = keep / f"{step.name}-{k}" if keep is not None else None
            done = tr.export_item(
                s, it.id, dest, checksum=step.checksum, timeout=step.timeout, log=log
            )
            if step.checksum and it.sha256 and done and done[0].sha256 != it.sha256:
                raise LabError(
                    self._what(step),
                    f"export of {it.name}: SHA-256 "
                    f"{done[0].sha256} differs from the imported {it.sha256}",
                )
            return sum(t.bytes for t in done), max((t.ended for t in done), default=None)

        self.record(step, self.batch(step, n, one))

    def _sync(self, i: int, step: Step) -> None:
        lib = self._lib(step)
        if not lib.subscribed:
            raise LabError(self._what(step), "is not a subscribed library: nothing to sync")
        s = self.session(lib.vcenter)
        # Both syncs run in the background on a real vCenter: done is when the library's
        # (or the item's) last_sync_time moves past its value before the call.
        item_id = None
        if step.item:
            item_id = cl.find_item(s, lib.id, step.item)
            if item_id is None:
                raise LabError(self._what(step), f"has no item {step.item!r} to sync")
        path = f"{cl.ITEM}/id:{item_id}" if item_id else f"{cl.LIBRARY}/id:{lib.id}"

        def last_sync() -> Any:
            return (s.call("GET", path, what="sync state") or {}).get("last_sync_time")

        before = last_sync()
        start = time.monotonic()
        if item_id:
            cl.sync_item(s, item_id)
        else:
            cl.sync_library(s, lib.id)
        tr.poll(
            lambda: True if last_sync() != before else None,
            timeout=step.timeout, what="sync", label=s.label,
        )  # fmt: skip
        end = time.monotonic()
        items, held = self._check_sync(step, lib, s)
        self.record(
            step,
            (OpRecord(step.name, step.op, 0, start, end, held),),
            ("items", float(items), "items"),
        )

    def _check_sync(
        self, step: Step, lib: LibState, s: cl.RestSession
    ) -> tuple[int, int | None]:
        """Items (and, for immediate download, bytes) the subscriber holds against its
        publisher's; fewer fails the trial with the numbers."""
        pub = self.libs[lib.publisher or ""]
        ps = self.session(pub.vcenter)
        want = {it.name: cl.item_bytes(ps, it.id) for it in cl.iter_items(ps, pub.id)}
        have = {it.name: it.id for it in cl.iter_items(s, lib.id)}
        if step.item:
            want = {k: v for k, v in want.items() if k == step.item}
            have = {k: v for k, v in have.items() if k == step.item}
        if len(have) < len(want):
            raise SyncShort(
                self._what(step),
                f"sync reported success but the subscriber holds {len(have)} of the "
                f"publisher's {len(want)} items (publisher on vcenter {pub.vcenter}, "
                f"subscriber on vcenter {lib.vcenter})",
            )
        held = known_sum(cl.item_bytes(s, i) for i in have.values())
        wanted = known_sum(want.values())
        if held is None or wanted is None:
            # Not a pass on 0: the byte check cannot be made, and the log says so.
            self.ctx.log("cl_sync_bytes_unknown", level="warning", library=lib.name,
                         held=held, wanted=wanted)  # fmt: skip
        elif not lib.on_demand and held < wanted:
            raise SyncShort(
                self._what(step),
                f"sync reported success but the subscriber "
                f"holds {held} of the publisher's {wanted} bytes",
            )
        return len(have), held

    def _deploy(self, i: int, step: Step) -> None:
        from vbench.workloads.content_library.placement import power_on, resolve_placement

        lib = self._lib(step)
        s = self.session(lib.vcenter)
        known = lib.items.get(step.item or "")
        item_id = known.id if known else cl.find_item(s, lib.id, step.item or "")
        if item_id is None:
            raise LabError(self._what(step), f"has no item {step.item!r} to deploy")
        kind = cl.get_item(s, item_id).type
        where = resolve_placement(self.res, lib.vcenter, step.target)
        n = step.count or 1

        def one(k: int) -> tuple[int, float | None]:
            name = self.unique(f"{step.name}-{k}")

            def make() -> str:
                if kind == "ovf":
                    return dp.deploy_ovf(s, item_id, name, where)
                return dp.deploy_template(s, item_id, name, where, powered_on=False)

            moid = self._create(VM_DEPLOYED_KIND, name, lib.vcenter, {"item": item_id}, make)
            if step.powered_on:
                power_on(self.res, lib.vcenter, moid, name)
            return 0, None

        self.record(step, self.batch(step, n, one))

    def _capture(self, i: int, step: Step) -> None:
        from vbench.workloads.content_library.placement import resolve_placement

        lib = self._lib(step)
        s = self.session(lib.vcenter)
        vm = self.res.inventory(lib.vcenter).find("vm", step.vm or "")
        where = resolve_placement(self.res, lib.vcenter, step.target)
        name = self.unique(f"{step.name}")
        start = time.monotonic()
        item_id = self._create(
            ITEM_KIND,
            name,
            lib.vcenter,
            {"library_id": lib.id},
            lambda: dp.capture_template(s, vm.moid, lib.id, name, where),
        )
        end = time.monotonic()
        lib.items[step.name] = ItemState(item_id, name)
        self.record(step, (OpRecord(step.name, step.op, 0, start, end),))


def known_sum(values: Iterable[int | None]) -> int | None:
    """The sum, or None when any value is unknown (a partial sum would read as fewer bytes)."""
    total = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total
