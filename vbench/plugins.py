"""Plugin discovery: workloads, collectors and parsers are found, never listed.

A plugin kind (``vbench.workloads``, ``vbench.collectors``, ``vbench.parsers``) is a
package whose sub-packages are its built-in plugins; importing a sub-package runs its
``@register`` decorator. Plugins shipped as separate distributions declare a Python
entry point in the group of the same name (``[project.entry-points."vbench.workloads"]
mydriver = "mypkg.driver:MyDriver"``); loading the entry point imports the module, which
registers the class (or, when the entry point names the class itself, it is registered
here).

Discovery is lazy: nothing is imported until the first lookup, so ``vbench --help``
stays fast and a broken third-party plugin only matters when it is asked for. Looking
one plugin up by name imports only the built-in package of that name when there is one
(``fio`` → ``vbench.workloads.fio``): ``vbench validate`` of a fio scenario pays for fio
alone, not for every driver's libraries (pyVmomi, httpx, Locust's helpers...). Listing
the names (``vbench plugins``, ``vbench drivers``) imports them all.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from vbench.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> plugin class for one plugin kind, filled by discovery."""

    def __init__(
        self,
        package: str,
        what: str,
        key: Callable[[T], str],
        origin: Callable[[T], str] | None = None,
    ) -> None:
        self.package = package  # also the entry-point group
        self.what = what  # "workload driver", "collector", "parser": for messages
        self._key = key
        self._origin_of = origin or (lambda item: getattr(item, "__module__", "?"))
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._loaded = False
        self._broken: dict[str, str] = {}  # entry point or module -> why it did not load

    def register(self, item: T) -> T:
        """Decorator: make ``item`` available under its name."""
        name = self._key(item)
        module = self._origin_of(item)
        known = self._origin.get(name)
        if known is not None and known != module:
            raise ConfigError(f"two {self.what}s named {name!r}: {known} and {module}")
        self._items[name] = item
        self._origin[name] = module
        return item

    def _discover(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        import pkgutil  # listing every plugin: looking one up by name does not

        pkg = importlib.import_module(self.package)
        for info in pkgutil.iter_modules(pkg.__path__, f"{self.package}."):
            if info.ispkg:  # one package per plugin; flat modules are shared helpers
                self._import(info.name)
        for ep in entry_points(group=self.package):
            try:
                obj = ep.load()
            except Exception as exc:  # a third-party plugin must not break the others
                self._broken[ep.name] = f"{ep.value}: {type(exc).__name__}: {exc}"
                continue
            if obj in self._items.values() or isinstance(obj, type(pkg)):
                continue  # its module registered it, or the entry point names a module
            try:
                self.register(obj)
            except (ConfigError, AttributeError, TypeError) as exc:  # a clash, not a plugin
                self._broken[ep.name] = f"{ep.value}: {exc}"

    def _import(self, module: str) -> None:
        try:
            importlib.import_module(module)
        except Exception as exc:  # a missing optional dependency, or a plugin's own bug:
            # listed as broken (`vbench plugins --check` exits 3, and asking for it says
            # why) instead of failing every command or leaving the registry half filled
            self._broken[module.rsplit(".", 1)[-1]] = f"{module}: {type(exc).__name__}: {exc}"

    def _builtin(self, name: str) -> T | None:
        """The built-in plugin ``name`` from its own package alone, without discovery."""
        if self._loaded or name in self._items:
            return self._items.get(name)
        module = f"{self.package}.{name.replace('-', '_')}"
        if not module.rsplit(".", 1)[-1].isidentifier():
            return None
        spec = importlib.util.find_spec(module)
        if spec is None or spec.submodule_search_locations is None:
            return None  # no package of that name (flat modules are helpers, not plugins)
        self._import(module)
        return self._items.get(name)

    def get(self, name: str) -> T:
        found = self._builtin(name)
        if found is not None:
            return found
        self._discover()
        try:
            return self._items[name]
        except KeyError:
            pass
        if name in self._broken:
            raise ConfigError(f"{self.what} {name!r} could not be loaded ({self._broken[name]})")
        close = difflib.get_close_matches(name, list(self._items), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown {self.what} {name!r} (available: {', '.join(self.names())}){hint}"
        )

    def loaded(self) -> dict[str, T]:
        """The live name -> plugin mapping after discovery (tests patch entries in it)."""
        self._discover()
        return self._items

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items[n] for n in self.names())

    def origin(self, name: str) -> str:
        """The module a plugin came from (shown by `vbench plugins`)."""
        self._discover()
        return self._origin.get(name, "?")

    def broken(self) -> dict[str, str]:
        self._discover()
        return dict(self._broken)
