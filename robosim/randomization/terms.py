"""Randomization terms: what an event's `property` does, as registered functions.

An event (robosim.randomization.events) names a `property`; the property is a term in
this registry. A term is a function plus its declaration:

    @register_term("obs_bias", kinds=("observation",), modes=("step",), operation="add")
    def obs_bias(target, event, env_idx, values):
        target.write(env_idx, target.read(env_idx) + values)

`fn(target, event, env_idx, values)` changes env_idx's copies of the target. `target`
is the handle the event's `target` field resolved to (see the kinds and phases below),
`env_idx` int64 (M,) the envs the event fires in, `values` float32 (M, dim) their
draws from `dist` (event.operation says how to combine them with the built value:
`combine(base, value, event.operation)`). Built-in and user terms are registered the
same way, run through the same path and look alike in `randomization=`; a later
registration of the same (name, kind) replaces the earlier one.

Declaration fields: `kinds` (target kinds the term acts on), `dim` (values per draw; None:
the target's width, e.g. an observation leaf's size: a one-value `dist` then gives
independent draws for every element), `operation` (default "set" | "add" | "scale"),
`lower` (smallest value a "set"/"scale" may give; None: unbounded), `modes` (when it may
fire), `phase` (where in the env's cycle it runs, see PHASES).

Phases: "build" terms change an object's description (robosim.sim.objects.RigidObject)
while the scene is built, before the task's build_scene makes the object, so they fire
in mode "reconfigure" only and act on object targets only (pools included); their
handle is an ObjectDescriptions (`read(i)` / `write(i, obj)` of env i's description).
"before_init" terms change the built scene before the task's initialize_episode (what
the task then places: which pool variant is in play). "after_init" terms (the default)
change it after initialize_episode, so they override what the task set. Interval and
step events run when they fire, whatever the phase; in mode "reconfigure" the
non-build phases run once the scene exists, in declaration order.

Target kinds and their handles after the build: object (ObjectTarget: `.view`, an
ActorView), articulation and robot (ArticulationTarget: `.view`), pool (PoolTarget),
light and camera (robosim.sensors.targets), observation and action (StreamTarget:
`read`/`write` of the (N, D) tensor being returned or applied).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MODES = ("reconfigure", "reset", "interval", "step")
PHASES = ("build", "before_init", "after_init")
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
    phase: str


_TERMS: dict[tuple[str, str], Term] = {}


def register_term(name: str, *, kinds: tuple[str, ...], modes: tuple[str, ...] = MODES, dim: int | None = 1,
                  operation: str = "set", lower: float | None = None,
                  phase: str = "after_init") -> Callable[[TermFn], TermFn]:
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
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    if phase == "build" and (tuple(modes) != ("reconfigure",) or tuple(kinds) != ("object",)):
        raise ValueError(f"a phase 'build' term acts on object descriptions in mode 'reconfigure' only: kinds must "
                         f"be ('object',) and modes ('reconfigure',), got kinds={kinds!r} modes={modes!r}")

    def register(fn: TermFn) -> TermFn:
        if not callable(fn):
            raise TypeError(f"register_term({name!r}) needs a function, got {type(fn).__name__}")
        for kind in kinds:
            _TERMS[(name, kind)] = Term(name, kind, fn, dim, operation, lower, tuple(modes), phase)
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
