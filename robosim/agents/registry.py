"""Robot registry: the built-in robots, robots registered in-process with
`register_robot`, and third-party robots found through the `robosim.robots` entry point
group (each entry point names a RobotSpec, or a function returning one)."""
from __future__ import annotations

from importlib.metadata import entry_points
from typing import Callable

from robosim.agents.spec import RobotSpec

ENTRY_POINT_GROUP = "robosim.robots"
DEFAULT_ROBOT = "panda"   # the robot of a task that declares no default
_ROBOTS: dict[str, RobotSpec] = {}
_ENTRY_POINTS: dict[str, object] = {}


def register_robot(spec_or_name: RobotSpec | str | None = None):
    """Register a robot.

    `register_robot(spec)` registers a RobotSpec under `spec.name` and returns it.
    As a decorator, `@register_robot("name")` (or bare `@register_robot`) registers what
    the decorated zero-argument function returns (a RobotSpec)."""
    if isinstance(spec_or_name, RobotSpec):
        return _add(spec_or_name)
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
        _add(spec)
        return factory

    return decorate


def _add(spec: RobotSpec) -> RobotSpec:
    spec.validate()
    _ROBOTS[spec.name] = spec
    return spec


def _discover() -> None:
    import robosim.agents.builtin_robots  # noqa: F401  (registers the shipped robots)

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _ENTRY_POINTS.setdefault(ep.name, ep)


def list_robots() -> list[str]:
    """Sorted names of every known robot."""
    _discover()
    return sorted(set(_ROBOTS) | set(_ENTRY_POINTS))


def get_robot_spec(name: str) -> RobotSpec:
    """The RobotSpec registered as `name` (ValueError naming the known robots otherwise)."""
    if not isinstance(name, str):
        raise ValueError(f"robot must be a robot name (str), one of {list_robots()}, got {name!r}")
    if name not in _ROBOTS:
        _discover()
        if name not in _ROBOTS and name in _ENTRY_POINTS:
            loaded = _ENTRY_POINTS[name].load()
            spec = loaded() if callable(loaded) and not isinstance(loaded, RobotSpec) else loaded
            if not isinstance(spec, RobotSpec) or spec.name != name:
                raise ValueError(f"entry point {name!r} in group {ENTRY_POINT_GROUP!r} must give a RobotSpec "
                                 f"named {name!r}, got {spec!r}")
            _add(spec)
    if name not in _ROBOTS:
        raise ValueError(f"robot must be one of {list_robots()}, got {name!r}")
    return _ROBOTS[name]
