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
inside whichever function needs it. Type checkers see the real module.
``tests/unit/test_import_cost.py`` holds which libraries each light command loads.

Only for third-party libraries: vbench's own modules are imported the ordinary way, so
that the layering test sees every dependency between them.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for the module ``name`` until an attribute is read, then imports it and
    copies its namespace in, so later reads are plain attribute lookups."""

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        # Called only for names not yet copied in: the first read, or names a module
        # computes on demand (its own __getattr__).
        module = importlib.import_module(self.__dict__["_lazy_name"])
        self.__dict__.update(vars(module))
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for ``import name`` that imports it at the first attribute read."""
    return LazyModule(name)
