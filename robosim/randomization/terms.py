"""Randomization terms: what an event's `property` does, as registered functions.

An event (robosim.randomization.events) names a `property`; the property is a term in
this registry. A term is a function plus its declaration:

    @register_term("obs_bias", kinds=("observation",), modes=("step",), operation="add")
    def obs_bias(target, event, env_idx, values):
        target.write(env_idx, target.read(env_idx) + values)

`fn(target, event, env_idx, values)` changes env_idx's copies of the target. `target`
is the handle the event's `target` field resolved to in the built env (see the kinds
below), `env_idx` int64 (M,) the envs the event fires in, `values` float32 (M, dim) their
draws from `dist` (event.operation says how to combine them with the built value:
`combine(base, value, event.operation)`). Built-in and user terms are registered the
same way and look alike in `randomization=`; a later registration of the same
(name, kind) replaces the earlier one.

Declaration fields: `kinds` (target kinds the term acts on), `dim` (values per draw; None:
the target's width, e.g. an observation leaf's size: a one-value `dist` then gives
independent draws for every element), `operation` (default "set" | "add" | "scale"),
`lower` (smallest value a "set"/"scale" may give; None: unbounded), `modes` (when it may
fire), `build_time` (the term changes an object's description before it is built:
fn(obj: RigidObject, value: list[float], operation) -> RigidObject).

Target kinds and their handles: object (ObjectTarget: `.view`, an ActorView),
articulation and robot (ArticulationTarget: `.view`), pool (PoolTarget), light and camera
(robosim.sensors.targets), observation and action (StreamTarget: `read`/`write` of the
(N, D) tensor being returned or applied).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

MODES = ("reconfigure", "reset", "interval", "step")
TARGET_KINDS = ("object", "articulation", "robot", "light", "camera", "pool", "observation", "action")
OPERATIONS = ("set", "add", "scale")

TermFn = Callable[..., object]


@dataclass(frozen=True)
class Term:
    """One registered term for one target kind (see the module docstring)."""

    name: str
    kind: str
    fn: TermFn
    dim: int | None
    operation: str
    lower: float | None
    modes: tuple[str, ...]
    build_time: bool


_TERMS: dict[tuple[str, str], Term] = {}


def register_term(name: str, *, kinds: tuple[str, ...], modes: tuple[str, ...] = MODES, dim: int | None = 1,
                  operation: str = "set", lower: float | None = None,
                  build_time: bool = False) -> Callable[[TermFn], TermFn]:
    """Decorator: register `fn` as property `name` for each target kind in `kinds`."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an identifier-like str, got {name!r}")
    if isinstance(kinds, str) or not kinds or any(k not in TARGET_KINDS for k in kinds):
        raise ValueError(f"kinds must be a tuple of target kinds from {TARGET_KINDS}, got {kinds!r}")
    if isinstance(modes, str) or not modes or any(m not in MODES for m in modes):
        raise ValueError(f"modes must be a tuple of modes from {MODES}, got {modes!r}")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
        raise ValueError(f"dim must be a positive int or None (the target's width), got {dim!r}")
    if operation not in OPERATIONS:
        raise ValueError(f"operation must be one of {OPERATIONS}, got {operation!r}")
    if build_time and (modes != ("reconfigure",) or kinds != ("object",)):
        raise ValueError(f"a build_time term acts on objects in mode 'reconfigure' only, got kinds={kinds!r} "
                         f"modes={modes!r}")

    def register(fn: TermFn) -> TermFn:
        if not callable(fn):
            raise TypeError(f"register_term({name!r}) needs a function, got {type(fn).__name__}")
        for kind in kinds:
            _TERMS[(name, kind)] = Term(name, kind, fn, dim, operation, lower, tuple(modes), build_time)
        return fn
    return register


def get_term(name: str, kind: str) -> Term | None:
    """The term registered as property `name` for target kind `kind`, or None."""
    return _TERMS.get((name, kind))


def term_names(kind: str) -> list[str]:
    """Sorted property names registered for target kind `kind`."""
    return sorted(n for n, k in _TERMS if k == kind)


def combine(base, value, op: str):
    """The value an operation gives: set -> value, add -> base + value, scale -> base * value."""
    return value if op == "set" else base + value if op == "add" else base * value
