"""What randomization events act on: the handles a term function receives.

A phase "build" term gets an ObjectDescriptions (the object's descriptions while the
scene is built; `description_modifier` runs the term there). Every other term gets the
handle `resolve_target(event, parts)` finds for the event's `target` in a built env
(ValueError naming the event when the env has no such target, or when the backend
cannot change the property after the build). Physical properties are read and
written through the views (robosim.sim.properties), lights and cameras through the
camera rig (robosim.sensors.targets). Handles remember base values (the mass, material,
drive gains an env was built with) at the first write, so "scale" and "add" always
start from the built value, never from the last event's.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

from robosim.core.tree import leaf_items
from robosim.randomization.terms import Term, combine  # noqa: F401  (combine: sensors.targets imports it here)
from robosim.sim.building import ObjectModifier
from robosim.sim.objects import RigidObject
from robosim.sim.pool import PoolLayout


class ObjectDescriptions:
    """The handle of a phase "build" term: env i's description of the event's object
    while the scene is built. `read(i)` gives it, `write(i, obj)` replaces it (obj: a
    robosim.sim.objects.RigidObject, which the scene then builds)."""

    def __init__(self, event, descriptions: dict[int, RigidObject]):
        self.event, self._descriptions = event, descriptions

    def read(self, env_index: int) -> RigidObject:
        return self._descriptions[env_index]

    def write(self, env_index: int, obj: RigidObject) -> None:
        if not isinstance(obj, RigidObject):
            raise TypeError(f"randomization[{self.event.name!r}] term {self.event.property!r} must write a "
                            f"RigidObject for env {env_index}, got {type(obj).__name__}")
        self._descriptions[env_index] = obj


def description_modifier(event, mask: torch.Tensor, values: torch.Tensor) -> ObjectModifier:
    """The build-time modifier f(env_index, RigidObject) -> RigidObject that runs `event`'s
    phase "build" term on env_index's description (SimScene applies it to every
    description built under the event's object name, each variant of a pool included).
    mask (N,) bool: the envs the event fires in; values float32 (N, dim): their draws."""
    def modify(env_index: int, obj: RigidObject) -> RigidObject:
        if not mask[env_index]:
            return obj
        handle = ObjectDescriptions(event, {env_index: obj})
        event.term.fn(handle, event, torch.tensor([env_index]), values[env_index:env_index + 1])
        return handle.read(env_index)
    return modify


class Remembered:
    """A cache of base values keyed by (property, env)."""

    def __init__(self):
        self._base: dict = {}

    def base(self, key: Any, read: Callable[[], Any]) -> Any:
        """The value stored under `key`, read (once) by `read()` at the first call."""
        if key not in self._base:
            self._base[key] = read()
        return self._base[key]


class ObjectTarget(Remembered):
    """A rigid object (an ActorView, or the active variants of a pool) of scene `sim`."""

    def __init__(self, view, sim):
        super().__init__()
        self.view, self.sim = view, sim


class ArticulationTarget(Remembered):
    """An articulation (or the robot): drive gains and joint friction through its view."""

    def __init__(self, view):
        super().__init__()
        self.view = view


class PoolTarget:
    """Which variant of an object pool is active, per env."""

    def __init__(self, view):
        self.view = view


class StreamTarget:
    """An (N, D) float tensor the env returns (observation leaves) or takes (the action),
    perturbed every control step. `path` is the leaf's key path in the observation tree
    ("agent/qpos"), "" for every float leaf (or the whole flat tensor, or the action).
    `bind(space)` checks the path against the env's single space; `tensor` is set to the
    batch being returned or applied before each call of a term."""

    def __init__(self, event, path: str):
        self.event, self.path = event, path
        self.widths: dict[str, int] = {}
        self.tensor: torch.Tensor | None = None

    def bind(self, space: gym.Space) -> None:
        """Check the path names float leaves of `space` (one env's); `widths` becomes
        {leaf path: values per env}, in the observation's order."""
        leaves = _float_leaves(space, self.path)
        where = f"randomization[{self.event.name!r}]['target']"
        if not leaves:
            raise ValueError(f"{where} names {self.event.target or 'the observation'!r}, which has no float "
                             f"leaf in this env's space; leaves: {sorted(dict(leaf_items(space)))}")
        self.widths = {p: int(torch.tensor(s.shape).prod()) for p, s in leaves}

    def read(self, env_idx: torch.Tensor) -> torch.Tensor:
        return self.tensor[env_idx.to(self.tensor.device)]

    def write(self, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        self.tensor[env_idx.to(self.tensor.device)] = values.to(self.tensor.device, self.tensor.dtype)


def _float_leaves(space: gym.Space, path: str) -> list[tuple[str, gym.Space]]:
    leaves = dict(leaf_items(space))
    chosen = leaves if not path else {p: s for p, s in leaves.items() if p == path or p.startswith(path + "/")}
    return [(p, s) for p, s in chosen.items() if isinstance(s, gym.spaces.Box) and s.dtype.kind == "f"]


def _unknown(event, what: str, known) -> ValueError:
    return ValueError(f"randomization[{event.name!r}]['target'] names {what}, which this env does not have; "
                      f"known: {sorted(known)}")


class TermApplier:
    """An event's term bound to its target's handle: `apply(event, env_idx, values)`."""

    def __init__(self, term: Term, handle: Any):
        self.term, self.handle = term, handle

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        self.term.fn(self.handle, event, env_idx, values)


def refuse_unshown(event, backend: str, why: str, modes: tuple[str, ...] = ("reconfigure",)) -> None:
    """ValueError, unless event.mode is among `modes`, for a visual event that SAPIEN's
    batched renderer (physx_cuda, physx_gpu_emulated) would not show: it names the event,
    its property, mode and the backend, says why, and which modes work there."""
    if event.mode in modes:
        return
    works = f"modes that work there: {list(modes)}" if modes else "no mode works there"
    raise ValueError(f"randomization[{event.name!r}] sets {event.kind} property {event.property!r} in mode "
                     f"{event.mode!r}, which sim_backend {backend!r} cannot show: {why}; {works}, and every mode "
                     f"works on 'physx_cpu'")


def resolve_target(event, parts: Any, declared_cameras) -> TermApplier | None:
    """`event`'s term bound to its target in the built env `parts` (its sim, robot and
    cameras; declared_cameras: the task's camera configs, which camera events may name);
    None for a phase "build" term, which has run on the descriptions (its object exists:
    checked here, since a description modifier for a name nothing builds never runs)."""
    target = _resolve(event, parts, declared_cameras)
    if event.term.phase == "build":
        return None
    if isinstance(target, (ObjectTarget, ArticulationTarget)) and event.property in target.view.refused_properties:
        raise ValueError(f"randomization[{event.name!r}] sets property {event.property!r} of {event.target!r}, "
                         f"which sim_backend {parts.sim.backend!r} cannot change after the build (SAPIEN's GPU "
                         f"PhysX takes it only before gpu_init); use sim_backend 'physx_cpu' for this event")
    return TermApplier(event.term, target)


def _resolve(event, parts: Any, declared_cameras):
    sim = parts.sim
    if event.kind == "object":
        if event.target not in sim.actors:
            raise _unknown(event, f"object {event.target!r}", sim.actors)
        view = sim.actors[event.target]
        if event.property == "mass" and not view.is_dynamic(0):
            raise ValueError(f"randomization[{event.name!r}] sets property 'mass' of object {event.target!r}, "
                             f"which is a static or kinematic body (PhysX ignores its mass); randomize a dynamic "
                             f"object's mass, or drop the event")
        return ObjectTarget(view, sim)
    if event.kind == "pool":
        pools = {n: v for n, v in sim.actors.items() if isinstance(v, PoolLayout)}
        if event.target not in pools:
            raise _unknown(event, f"object pool {event.target!r}", pools)
        return PoolTarget(pools[event.target])
    if event.kind == "articulation":
        if event.target not in sim.articulations:
            raise _unknown(event, f"articulation {event.target!r}", sim.articulations)
        return ArticulationTarget(sim.articulations[event.target])
    if event.kind == "robot":
        return ArticulationTarget(parts.robot.view)
    if event.kind in ("light", "camera"):     # the render side: robosim.sensors.targets
        return parts.cameras.randomization_target(event, declared_cameras)
    if event.kind in ("observation", "action"):
        return StreamTarget(event, event.target)
    raise ValueError(f"randomization[{event.name!r}] has an unknown kind {event.kind!r}")
