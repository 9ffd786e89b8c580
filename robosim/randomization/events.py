"""Randomization events declared as plain data (Isaac Lab's EventManager modes, as dicts).

An event is a name and a dict:

    "cube_mass": {"mode": "reset", "target": "object:cube", "property": "mass",
                  "dist": {"uniform": [0.05, 0.3]}},
    "push":      {"mode": "interval", "target": "object:cube", "property": "velocity",
                  "operation": "add", "dist": {"uniform": [[-0.5, -0.5, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0, 0]]},
                  "period_s": {"uniform": [2.0, 4.0]}},
    "lights":    {"mode": "reconfigure", "target": "light", "property": "color",
                  "dist": {"uniform": [[0.6, 0.6, 0.6], [1.0, 1.0, 1.0]]}, "probability": 0.5}

Fields: mode ("reconfigure": at every scene build; "reset": when the env resets,
partial resets included; "interval": per-env timers whose period in seconds is drawn
from `period_s`; "step": every control step, for the observation and action terms),
target ("object:NAME", "articulation:NAME", "camera:NAME", "pool:NAME", "robot",
"light", "action", "observation" or "observation:KEY/PATH"), property (a term of
robosim.randomization.terms: built-in ones in builtin_terms.py, user ones added with
`register_term`), dist (see distributions.py), operation ("set" | "add" | "scale";
default per term), envs (indices the event may touch; default all), probability
(chance per env and firing; default 1). A task declares `default_events`;
`make(..., randomization={...})` adds events, overrides fields of a declared one, or
removes one with `None`.

Determinism: every draw comes from env i's own counter-based stream keyed by (seed_i,
event name, episode k or build r, firing j), so what env i gets never depends on i,
num_envs or other envs' resets.
"""
from __future__ import annotations

import collections
import hashlib
from dataclasses import dataclass
from typing import Any

import torch

from robosim.randomization import builtin_terms  # noqa: F401  (registers the built-in terms)
from robosim.randomization.distributions import Distribution
from robosim.randomization.rng import EnvRandomStreams
from robosim.randomization.terms import MODES, OPERATIONS, TARGET_KINDS, Term, get_term, term_names

NAMED_KINDS = ("object", "articulation", "camera", "pool")   # target 'KIND:NAME'
_FIELDS = {"mode", "target", "property", "dist", "operation", "envs", "probability", "period_s"}


def _name_hash(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little", signed=True)


@dataclass(frozen=True)
class Event:
    """One validated event (see the module docstring); `spec` is its plain-data form."""

    name: str
    mode: str
    kind: str            # target kind: object, articulation, robot, light, camera, pool
    target: str          # the object/articulation/camera/pool name ("" for robot, light)
    property: str
    dist: Distribution
    operation: str
    envs: tuple[int, ...] | None
    probability: float
    period: Distribution | None
    spec: dict
    term: Term
    key: int             # names the event's random streams (EnvRandomStreams.event)

    @classmethod
    def parse(cls, name: str, spec: Any) -> Event:
        where = f"randomization[{name!r}]"
        if not isinstance(spec, dict):
            raise TypeError(f"{where} must be a dict of event fields, got {type(spec).__name__}")
        unknown = sorted(set(spec) - _FIELDS)
        if unknown:
            raise ValueError(f"{where} has unknown field(s) {unknown}; fields are {sorted(_FIELDS)}")
        for required in ("mode", "target", "property", "dist"):
            if required not in spec:
                raise ValueError(f"{where} needs the field {required!r}")
        mode = spec["mode"]
        if mode not in MODES:
            raise ValueError(f"{where}['mode'] must be one of {MODES}, got {mode!r}")
        target = spec["target"]
        kind, _, target_name = str(target).partition(":")
        if kind not in TARGET_KINDS or (kind in NAMED_KINDS) != bool(target_name) and kind != "observation":
            raise ValueError(f"{where}['target'] must be 'object:NAME', 'articulation:NAME', 'camera:NAME', "
                             f"'pool:NAME', 'robot', 'light', 'action', 'observation' or 'observation:KEY/PATH', "
                             f"got {target!r}")
        prop = spec["property"]
        term = get_term(prop, kind) if isinstance(prop, str) else None
        if term is None:
            raise ValueError(f"{where}['property'] must be one of {term_names(kind)} for a {kind} target (or a term "
                             f"registered with robosim.randomization.register_term), got {prop!r}")
        if mode not in term.modes:
            raise ValueError(f"{where}['property'] {prop!r} cannot change in mode {mode!r}; modes: {list(term.modes)}")
        op = spec.get("operation", term.operation)
        if op not in OPERATIONS:
            raise ValueError(f"{where}['operation'] must be 'set', 'add' or 'scale', got {op!r}")
        dist = Distribution.parse(f"{where}['dist']", spec["dist"])
        if term.dim is not None and dist.dim not in (1, term.dim):
            raise ValueError(f"{where}['dist'] must give {term.dim} value(s) per draw for {prop!r}, got {dist.dim}")
        low = dist.bounds()[0]
        if op in ("set", "scale") and term.lower is not None and low < term.lower:
            raise ValueError(f"{where}['dist'] can give {low} but {prop!r} with operation {op!r} needs values "
                             f">= {term.lower}")
        envs = spec.get("envs")
        if envs is not None:
            if not isinstance(envs, (list, tuple)) or not all(isinstance(e, int) and e >= 0 for e in envs):
                raise ValueError(f"{where}['envs'] must be a list of env indices >= 0, got {envs!r}")
            envs = tuple(envs)
        p = spec.get("probability", 1.0)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"{where}['probability'] must be in [0, 1], got {p!r}")
        period = None
        if mode == "interval":
            if "period_s" not in spec:
                raise ValueError(f"{where} has mode 'interval' and needs 'period_s' (seconds)")
            period = Distribution.parse(f"{where}['period_s']", spec["period_s"])
            if period.dim != 1 or period.bounds()[0] <= 0:
                raise ValueError(f"{where}['period_s'] must be one number > 0 per draw, got {spec['period_s']!r}")
        elif "period_s" in spec:
            raise ValueError(f"{where}['period_s'] applies to mode 'interval' only, got mode {mode!r}")
        return cls(name, mode, kind, target_name, prop, dist, op, envs, float(p), period, dict(spec), term,
                   _name_hash(name))


def merge_events(defaults: dict[str, dict], user: dict[str, Any] | None) -> dict[str, dict]:
    """The task's default events updated by the user's: a dict adds an event or
    overrides fields of a default one; None removes it."""
    merged = {name: dict(spec) for name, spec in defaults.items()}
    if user is None:
        return merged
    if not isinstance(user, dict):
        raise TypeError(f"randomization must be a dict {{event name: event dict or None}}, got {type(user).__name__}")
    for name, spec in user.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"randomization keys must be non-empty event names, got {name!r}")
        if spec is None:
            if name not in merged:
                raise ValueError(f"randomization[{name!r}] = None removes a default event, but the task declares "
                                 f"none of that name; its events are {sorted(defaults)}")
            del merged[name]
        elif isinstance(spec, dict) and name in merged:
            merged[name] = {**merged[name], **spec}
        else:
            merged[name] = spec
    return merged


def draw(event: Event, streams: EnvRandomStreams, phase: int, firing: torch.Tensor | int, env_idx: torch.Tensor,
         dist: Distribution | None = None, slot: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(mask (M,) bool: the envs of env_idx (int64 (M,), CPU) the event fires in, given its
    `envs` and `probability`; values (M, dim) float32 from `dist`, the event's own by
    default), each env from its own stream (slot for the mask, slot + 1 for the values)."""
    mask = torch.ones(len(env_idx), dtype=torch.bool)
    if event.envs is not None:
        mask &= torch.isin(env_idx.cpu(), torch.tensor(event.envs, dtype=torch.int64))
    if event.probability < 1.0:
        mask &= streams.event(event.key, phase, env_idx, firing, slot).uniform(0.0, 1.0) < event.probability
    values = (dist or event.dist).sample(streams.event(event.key, phase, env_idx, firing, slot + 1))
    dim = len(values[0]) if values.ndim == 2 else 1
    return mask, values.reshape(len(env_idx), dim)


def parse_events(specs: dict[str, Any]) -> list[Event]:
    """Validate every event; errors name the event and the field."""
    return [Event.parse(name, spec) for name, spec in specs.items()]


def periods_to_steps(period_s: torch.Tensor, control_dt: float) -> torch.Tensor:
    """(M,) seconds -> (M,) int64 control steps, at least 1."""
    return torch.clamp(torch.round(period_s / control_dt), min=1).to(torch.int64)


class EventLog(collections.deque):
    """The last `maxlen` applied events: dicts {event, mode, env, step, value}."""

    def __init__(self, maxlen: int = 100_000):
        super().__init__(maxlen=maxlen)

    def of(self, event: str, env: int | None = None) -> list[dict]:
        return [e for e in self if e["event"] == event and (env is None or e["env"] == env)]

