"""The CloudStone load driver, run by Locust in the client guests (pushed by vbench).

Everything comes from the JSON file named by $VBENCH_CS_CONFIG, written by vbench from
the scenario: the operations and their transition matrix (a Locust MarkovTaskSet), the
think time (negative exponential with a mean, truncated at a maximum, or a fixed cycle),
the users and the ramp-up / steady / ramp-down shape, or, for the fixed-rate profile,
a request rate on one static page.

Each Locust process appends to its own records file (``<records>.<pid>``), which vbench
reads after the run to compute the steady-state figures itself:
  S <epoch>                                  the test started (this process)
  R <end epoch> <operation> <ms> <ok> <bytes>  one operation: page plus its images
  C <epoch> <cpu seconds> <users>            once a second: this process's CPU time and users
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
import uuid

import gevent
from locust import LoadTestShape, constant_pacing, events, task
from locust.contrib.fasthttp import FastHttpUser
from locust.runners import MasterRunner
from locust.user.markov_taskset import MarkovTaskSet

CFG = json.load(open(os.environ["VBENCH_CS_CONFIG"]))  # noqa: SIM115 - read once at import
_IMG = re.compile(r'<img src="(/static/[^"]+)"')
_OUT = open(f"{CFG['records']}.{os.getpid()}", "a", buffering=1 << 16)  # noqa: SIM115


def _write(line: str) -> None:
    _OUT.write(line + "\n")


@events.test_start.add_listener
def _started(environment, **_kw):  # type: ignore[no-untyped-def]
    _write(f"S {time.time():.6f}")

    def sample() -> None:
        # CPU time of this process and its running users, once a second: vbench flags a
        # saturated load generator from them (CPU > 80 % of a core, or fewer users).
        while True:
            runner = environment.runner
            # A master runs no users itself: its workers report theirs.
            users = 0 if runner is None or isinstance(runner, MasterRunner) else runner.user_count
            _write(f"C {time.time():.6f} {time.process_time():.4f} {users}")
            _OUT.flush()
            gevent.sleep(1.0)

    gevent.spawn(sample)


@events.quitting.add_listener
def _quit(**_kw):  # type: ignore[no-untyped-def]
    _OUT.flush()


def _record(op: str, started: float, ok: bool, size: int) -> None:
    end = time.time()
    _write(f"R {end:.6f} {op} {(end - started) * 1000:.3f} {int(ok)} {size}")


def _think(user: object) -> float:
    t = CFG["think"]
    if t["kind"] == "negexp":
        return min(random.expovariate(1.0 / t["mean"]), t["max"]) if t["mean"] > 0 else 0.0
    return 0.0  # cycle: handled by constant_pacing below


def _fetch(user: FastHttpUser, op: str, method: str, path: str, data: dict | None = None) -> None:
    """One operation: the page, then every image it shows, timed as a whole."""
    started = time.time()
    ok, size = True, 0
    with user.client.request(method, path, data=data, name=op, catch_response=True) as r:
        good = r.status_code is not None and 200 <= r.status_code < 400
        if not good:
            r.failure(f"HTTP {r.status_code}")
        ok = ok and good
        body = r.text or "" if good else ""
        size += len(r.content or b"")
    if CFG["fetch_images"] and ok:
        for src in dict.fromkeys(_IMG.findall(body)):
            with user.client.get(src, name=f"{op} (static)", catch_response=True) as img:
                if img.status_code != 200:
                    img.failure(f"HTTP {img.status_code}")
                    ok = False
                size += len(img.content or b"")
    _record(op, started, ok, size)


def _pick(n: int) -> int:
    return random.randint(1, max(1, n))


# The seven Olio operations as requests on the test application (or a compatible app).
def _home(ts: MarkovTaskSet) -> None:
    _fetch(ts.user, "HomePage", "GET", "/")


def _login(ts: MarkovTaskSet) -> None:
    n = _pick(CFG["persons"])
    ts.user.person = n
    _fetch(ts.user, "Login", "POST", "/login.php", {"user": f"user{n}", "password": f"password{n}"})


def _tag_search(ts: MarkovTaskSet) -> None:
    _fetch(ts.user, "TagSearch", "GET", f"/tagsearch.php?tag=tag{_pick(CFG['tags'])}")


def _event_detail(ts: MarkovTaskSet) -> None:
    _fetch(ts.user, "EventDetail", "GET", f"/event.php?id={_pick(CFG['events'])}")


def _person_detail(ts: MarkovTaskSet) -> None:
    _fetch(ts.user, "PersonDetail", "GET", f"/person.php?id={_pick(CFG['persons'])}")


def _add_person(ts: MarkovTaskSet) -> None:
    name = "new" + uuid.uuid4().hex[:16]
    _fetch(ts.user, "AddPerson", "POST", "/addperson.php", {
        "username": name, "password": "pw", "first_name": "New", "last_name": "Person",
        "email": f"{name}@example.test", "city": "Anytown", "summary": "Added by the driver.",
        "image": str(_pick(20))})


def _add_event(ts: MarkovTaskSet) -> None:
    _fetch(ts.user, "AddEvent", "POST", "/addevent.php", {
        "title": "New event", "description": "Added by the driver.",
        "event_date": time.strftime("%Y-%m-%d"), "address": "1 Main Street",
        "submitter": str(getattr(ts.user, "person", 1)),
        "tags": f"tag{_pick(CFG['tags'])} tag{_pick(CFG['tags'])}", "image": str(_pick(20))})


_OPS = {"HomePage": _home, "Login": _login, "TagSearch": _tag_search,
        "EventDetail": _event_detail, "PersonDetail": _person_detail,
        "AddPerson": _add_person, "AddEvent": _add_event}  # fmt: skip


def _markov_class() -> type:
    """A MarkovTaskSet whose states are the configured operations (first = start state)."""
    attrs: dict[str, object] = {}
    for op in CFG["operations"]:
        fn = _OPS[op]

        def state(self, _fn=fn):  # type: ignore[no-untyped-def]
            _fn(self)

        state.__name__ = op
        state.transitions = {to: w for to, w in CFG["matrix"][op].items() if w > 0}
        attrs[op] = state
    return type("OlioMarkov", (MarkovTaskSet,), attrs)


def _wait():  # type: ignore[no-untyped-def]
    t = CFG["think"]
    return constant_pacing(t["seconds"]) if t["kind"] == "cycle" else _think


if CFG["profile"] == "olio":

    class OlioUser(FastHttpUser):
        host = CFG["host"]
        tasks = [_markov_class()]  # noqa: RUF012 - Locust reads a class attribute
        wait_time = _wait()
        person = 1

else:  # fixed rate: every user fetches the static page once per cycle

    class RateUser(FastHttpUser):
        host = CFG["host"]
        wait_time = constant_pacing(CFG["users"] / CFG["rate"])

        @task
        def static_page(self) -> None:
            _fetch(self, "StaticPage", "GET", CFG["static_path"])


class Shape(LoadTestShape):
    """Linear ramp-up to the users, steady, linear ramp-down, then stop."""

    def tick(self):  # type: ignore[no-untyped-def]
        t = self.get_run_time()
        n, up, steady, down = CFG["users"], CFG["ramp_up"], CFG["steady"], CFG["ramp_down"]
        if t < up:
            # One tick (1 s) ahead, so that every user runs when the steady state begins.
            return max(1, min(n, math.ceil(n * (t + 1) / up))), n
        if t < up + steady:
            return n, n
        if t < up + steady + down:
            return max(1, math.ceil(n * (1 - (t - up - steady) / down))), n
        return None
