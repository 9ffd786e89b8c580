"""A name -> entry registry shared by tasks and robots: entries registered in-process,
entries of installed packages found through an entry-point group (imported only when
asked for), built-ins imported on first lookup, and optionally 'package.module:Name'
strings imported on demand."""
from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of one kind ("task", "robot") by name.

    arg: the argument name lookups report in their errors ("task_id", "robot").
    group: the entry-point group searched for third-party entries.
    check(name, value) -> T: validates (and may convert) what is registered or loaded,
    raising TypeError/ValueError; it returns the entry to store.
    load_builtins(registry): called on discovery, after the entry points are listed
    (import the modules whose entries register themselves).
    import_paths: accept 'package.module:Name' in `get` (registered under that string).
    hint: a sentence appended to the unknown-name error."""

    def __init__(self, kind: str, arg: str, group: str, check: Callable[[str, Any], T],
                 load_builtins: Callable[[Registry[T]], None], import_paths: bool = False, hint: str = ""):
        self.kind, self.arg, self.group = kind, arg, group
        self._check, self._load_builtins = check, load_builtins
        self.import_paths, self.hint = import_paths, hint
        self.entries: dict[str, T] = {}
        self.entry_points: dict[str, Any] = {}   # name -> importlib.metadata.EntryPoint, not loaded yet
        self._listed = False

    def add(self, name: str, value: Any) -> T:
        """Register `value` (checked) under `name`, replacing an earlier entry; returns it.
        Warns (UserWarning, naming both) when `name` belongs to an entry point of the group
        whose object is not `value`: a user entry shadowing a built-in one.
        TypeError for a non-str name, ValueError for an empty one."""
        if not isinstance(name, str):
            raise TypeError(f"a {self.kind} name must be a str, got {name!r} ({type(name).__name__})")
        if not name:
            raise ValueError(f"a {self.kind} name must be a non-empty str, got ''")
        entry = self._check(name, value)
        self._warn_if_shadowing(name, value, entry)
        self.entries[name] = entry
        return entry

    def _warn_if_shadowing(self, name: str, value: Any, entry: T) -> None:
        """UserWarning naming both objects when `name` is an entry point (a built-in or an
        installed package's entry) and `value` is not that entry point's object."""
        if not self._listed:
            self._list_entry_points()
        ep = self.entry_points.get(name)
        if ep is None or (isinstance(value, type) and qualified_name(value) == ep.value):
            return
        module = sys.modules.get(ep.module)
        if module is not None and getattr(module.__spec__, "_initializing", False):
            return   # the entry point's own module registering what it defines
        try:
            if ep.load() in (value, entry):
                return
        except Exception:   # noqa: BLE001  (a broken package is still shadowed: say so below)
            pass
        owner = ep.dist.name if ep.dist is not None else "an installed package"
        where = f"the built-in {self.kind}" if owner == "robosim" else f"the {self.kind} of {owner}"
        # stacklevel 4: the line that called register_task / register_robot
        warnings.warn(f"{self.arg} {name!r} now names {qualified_name(value)} in this process, shadowing {where} "
                      f"{ep.value} (entry point group {self.group!r}); register yours under another name to "
                      f"keep both", UserWarning, stacklevel=4)

    def _list_entry_points(self) -> None:
        for ep in entry_points(group=self.group):
            self.entry_points.setdefault(ep.name, ep)
        self._listed = True

    def discover(self) -> None:
        """List the group's entry points (again on every call: a package installed since
        shows up) and load the built-ins."""
        self._list_entry_points()
        self._load_builtins(self)

    def names(self) -> list[str]:
        """Sorted names of every known entry (registered or behind an entry point)."""
        self.discover()
        return sorted(set(self.entries) | set(self.entry_points))

    def get(self, name: str) -> T:
        """The entry registered as `name` (loading its entry point if needed, or importing
        'package.module:Name' when import_paths). TypeError for a non-str, ValueError
        listing the known names for an unknown one."""
        if not isinstance(name, str):
            raise TypeError(f"{self.arg} must be a {self.kind} name (str), one of {self.names()}, "
                            f"got {name!r} ({type(name).__name__})")
        if name not in self.entries:
            self.discover()
            if name not in self.entries and name in self.entry_points:
                self.add(name, self.entry_points[name].load())
            elif name not in self.entries and self.import_paths and ":" in name:
                self.add(name, import_object(name, self.arg))
        if name not in self.entries:
            hint = f" {self.hint}" if self.hint else ""
            raise ValueError(f"{self.arg} must be one of {self.names()}, got {name!r}.{hint}")
        return self.entries[name]


def qualified_name(value: Any) -> str:
    """'module:qualname' of a class or function; for another object, that of its type
    with ' instance' appended."""
    if isinstance(getattr(value, "__qualname__", None), str) and isinstance(getattr(value, "__module__", None), str):
        return f"{value.__module__}:{value.__qualname__}"
    return f"{type(value).__module__}:{type(value).__qualname__} instance"


def import_object(path: str, arg: str, example: str = "package.module:name") -> Any:
    """'package.module:name' (name may be dotted: 'mod:Class.attr') -> that object,
    importing the module. ValueError naming `arg` for a malformed string (the message
    shows `example`), a module that cannot be imported or a missing attribute."""
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise ValueError(f"{arg} must look like {example!r}, got {path!r}")
    module_name, attr = path.split(":")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"{arg} {path!r} names module {module_name!r}, which cannot be imported ({err})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{arg} {path!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj
