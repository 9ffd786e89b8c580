"""Moved names (docs/api.md, deprecation policy): an old import path keeps working for
one release, resolving to the object's new home with a DeprecationWarning that names
the old path, the new path and the release that removes the old one."""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

# Names moved after release 0.1.0 warn through the 0.2 release and are gone in this one.
REMOVED_IN = "0.3.0"


def moved_names(module: str, moves: dict[str, str], removed_in: str = REMOVED_IN) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `module` (pass `__name__`): each old name in `moves`
    ({'old_name': 'new.module:new_name'}) returns the object at its new home and warns
    (DeprecationWarning, attributed to the importing line); any other name raises the usual
    AttributeError, so importing the module or its other names does not warn.
    ValueError for a target that is not 'package.module:name'."""
    for old, target in moves.items():
        if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
            raise ValueError(f"moves[{old!r}] must look like 'package.module:name', got {target!r}")

    def __getattr__(name: str) -> Any:
        if name not in moves:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new_module, new_name = moves[name].split(":")
        warnings.warn(f"{module}.{name} moved to {new_module}.{new_name}; the old path will be removed in "
                      f"robosim {removed_in} (docs/api.md)", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new_module), new_name)

    return __getattr__
