"""The collector interface and registry (esxtop, vCenter counters, guest sysstat).

Collectors start before warm-up and stop after cool-down of every trial; their
series are stored whole and summarised over the steady-state window only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from vbench.errors import ConfigError

if TYPE_CHECKING:
    from vbench.results.records import Sample
    from vbench.workloads.base import TrialContext


class Collector(ABC):
    name: ClassVar[str]

    @abstractmethod
    def start(self, ctx: TrialContext) -> None:
        """Begin sampling (called before warm-up)."""

    @abstractmethod
    def stop(self, ctx: TrialContext) -> list[Sample]:
        """Stop sampling (after cool-down) and return window summaries."""


_REGISTRY: dict[str, type[Collector]] = {}


def register(cls: type[Collector]) -> type[Collector]:
    _REGISTRY[cls.name] = cls
    return cls


def get_collector(name: str) -> type[Collector]:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none in this version"
        raise ConfigError(f"unknown collector {name!r} (available: {known})") from None
