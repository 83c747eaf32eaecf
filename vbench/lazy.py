"""Heavy third-party libraries imported on first use, not when vbench is imported.

pandas, NumPy, pyarrow, SciPy and Jinja take about a second to import together; most
commands (``--help``, ``validate``, ``plan``, ``ls``) never touch them, yet a module that
imports one at its top makes every command that reaches the module pay for it. A module
that needs one writes::

    if TYPE_CHECKING:
        import pandas as pd
    else:
        pd = lazy_module("pandas")

and uses ``pd.DataFrame`` as before: the import happens at the first attribute read,
inside whichever function needs it, and the real module then replaces the stand-in in
that module's namespace. Type checkers see the real module.
``tests/unit/test_import_cost.py`` holds which libraries each light command loads.

Only for third-party libraries: vbench's own modules are imported the ordinary way, so
that the layering test sees every dependency between them.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


class LazyModule:
    """Stands for the module ``name`` in the module that made it, until an attribute is
    read: then imports it and puts the real module in its place there (later reads
    there cost nothing, and a test that patches the library is seen)."""

    def __init__(self, name: str, owner: dict[str, Any], member: str) -> None:
        self.__dict__["_lazy_name"] = name
        self.__dict__["_lazy_owner"] = owner
        self.__dict__["_lazy_member"] = member

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__dict__["_lazy_name"])
        for part in filter(None, self.__dict__["_lazy_member"].split(".")):
            module = getattr(module, part)
        owner = self.__dict__["_lazy_owner"]
        for key, value in list(owner.items()):
            if value is self:
                owner[key] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


def lazy_module(name: str, member: str = "") -> Any:
    """A stand-in for ``import name`` at the top of a module — or for ``from name import
    member`` (dotted: ``vmodl.query.PropertyCollector``), for what a package makes at
    import rather than holds as a module, such as pyVmomi's ``vim``: the import happens
    at the first attribute read."""
    return LazyModule(name, sys._getframe(1).f_globals, member)
