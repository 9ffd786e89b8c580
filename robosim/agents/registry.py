"""Robot registry: the built-in robots, robots registered in-process with
`register_robot`, and third-party robots found through the `robosim.robots` entry point
group (each entry point names a RobotSpec, or a function returning one)."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from robosim.agents.spec import RobotSpec
from robosim.core.registry import Registry

ENTRY_POINT_GROUP = "robosim.robots"
DEFAULT_ROBOT = "panda"   # the robot of a task that declares no default


def _check_spec(name: str, value: Any) -> RobotSpec:
    """A RobotSpec named `name` (or a zero-argument function returning one), validated."""
    spec = value() if callable(value) and not isinstance(value, RobotSpec) else value
    if not isinstance(spec, RobotSpec) or spec.name != name:
        raise ValueError(f"robot {name!r} (entry point group {ENTRY_POINT_GROUP!r}) must give a RobotSpec "
                         f"named {name!r}, got {spec!r}")
    spec.validate()
    return spec


def _load_builtin_robots(registry: Registry) -> None:
    importlib.import_module("robosim.agents.builtin_robots")   # registers the shipped robots


ROBOTS: Registry[RobotSpec] = Registry("robot", "robot", ENTRY_POINT_GROUP, _check_spec, _load_builtin_robots)


def register_robot(spec_or_name: RobotSpec | str | None = None):
    """Register a robot.

    `register_robot(spec)` registers a RobotSpec under `spec.name` and returns it.
    As a decorator, `@register_robot("name")` (or bare `@register_robot`) registers what
    the decorated zero-argument function returns (a RobotSpec)."""
    if isinstance(spec_or_name, RobotSpec):
        return ROBOTS.add(spec_or_name.name, spec_or_name)
    if callable(spec_or_name) and not isinstance(spec_or_name, str):
        return _decorate(None)(spec_or_name)
    if spec_or_name is not None and not isinstance(spec_or_name, str):
        raise TypeError(f"register_robot expects a RobotSpec, a name or nothing, got {type(spec_or_name).__name__}")
    return _decorate(spec_or_name)


def _decorate(name: str | None) -> Callable:
    def decorate(factory: Callable[[], RobotSpec]) -> Callable[[], RobotSpec]:
        spec = factory()
        if not isinstance(spec, RobotSpec):
            raise TypeError(f"register_robot: {factory!r} must return a RobotSpec, got {type(spec).__name__}")
        if name is not None and spec.name != name:
            raise ValueError(f"register_robot({name!r}): the spec's name must match, got {spec.name!r}")
        ROBOTS.add(spec.name, spec)
        return factory

    return decorate


def list_robots() -> list[str]:
    """Sorted names of every known robot."""
    return ROBOTS.names()


def get_robot_spec(name: str) -> RobotSpec:
    """The RobotSpec registered as `name` (TypeError for a non-str, ValueError naming the
    known robots for an unknown name)."""
    return ROBOTS.get(name)
