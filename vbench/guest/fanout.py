"""Doing one thing on several guests at once: stopping, tearing down, cleaning up.

A Ctrl-C must not wait for each guest in turn (a tool that needs its full TERM grace on
each of six guests would hold the user for half a minute): the step runs on every item
at once and returns when the last one is done, with every item's exception.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def on_each(items: Iterable[T], step: Callable[[T], None]) -> list[tuple[T, Exception]]:
    """``step(item)`` for every item, each in its own thread; the items that raised, with
    their exception, in the items' order. One item runs in the calling thread."""
    todo = list(items)
    if len(todo) <= 1:
        return _one(todo, step)
    failed: dict[int, Exception] = {}
    lock = threading.Lock()

    def run(i: int, item: T) -> None:
        try:
            step(item)
        except Exception as exc:  # handed back to the caller, which says what failed
            with lock:
                failed[i] = exc

    threads = [threading.Thread(target=run, args=(i, item), daemon=True,
                                name=f"vbench-each-{i}") for i, item in enumerate(todo)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [(todo[i], failed[i]) for i in sorted(failed)]


def _one(todo: list[T], step: Callable[[T], None]) -> list[tuple[T, Exception]]:
    out = []
    for item in todo:
        try:
            step(item)
        except Exception as exc:
            out.append((item, exc))
    return out
