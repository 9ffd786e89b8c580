"""Robot slots: which robots an env places, and how their actions are laid out.

A task places one robot (no `robot_slots`: one implicit slot, SINGLE_SLOT, at
`robot_base_position`) or several, declared by name:

    robot_slots = {"left": RobotSlot("panda", base_position=(-0.1, 0.35, 0.0)),
                   "right": RobotSlot("panda", base_position=(-0.1, -0.35, 0.0))}

make's `robot=` takes a robot name (every slot gets it) or, for a multi-robot task, a
dict {slot: name} (slots left out get their default). Each robot has its own controller;
make's `control_mode=` takes a mode name (every slot gets it) or, for a multi-robot task,
a dict {slot: mode} naming every slot. A multi-robot env's action is a Dict keyed by
slot (each slot's Box sized by its own mode), and a flat (N, sum of dims) view
concatenates the slots in declaration order.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robosim.agents import CONTROL_MODES, Robot, get_robot_spec, list_robots

SINGLE_SLOT = "robot"   # the name of a single-robot task's one slot


@dataclasses.dataclass(frozen=True)
class RobotSlot:
    """One robot place of a task: `default` robot name, base pose in the env frame
    (base_position (x, y, z) m, None: the robot's own; base_quat (w, x, y, z), None: the
    robot's own)."""

    default: str
    base_position: tuple[float, float, float] | None = None
    base_quat: tuple[float, float, float, float] | None = None


def task_slots(task: Any) -> dict[str, RobotSlot]:
    """{slot: RobotSlot} of a Task class, in declaration order (one SINGLE_SLOT entry for
    a task without robot_slots)."""
    slots = getattr(task, "robot_slots", None)
    if not slots:
        return {SINGLE_SLOT: RobotSlot(task.default_robot, task.robot_base_position)}
    return dict(slots)


def is_multi_robot(task: Any) -> bool:
    """True when the Task class declares robot_slots (its robots are addressed by slot)."""
    return bool(getattr(task, "robot_slots", None))


def check_robot_field(task: Any, robot: Any, check_one: Any = None) -> str | dict[str, str] | None:
    """make's `robot=` for Task class `task`, validated and normalized: None, a robot
    name, or (multi-robot tasks) a dict {slot: name} in slot order. ValueError naming an
    unknown slot or robot; `check_one(task, name, slot)` (slot None for a single-robot task)
    is called per robot to refuse one the task cannot use."""
    slots = task_slots(task)
    if robot is None:
        return None
    if isinstance(robot, dict):
        if not is_multi_robot(task):
            raise ValueError(f"robot must be a robot name for {task.__name__} (it places one robot), "
                             f"got the dict {robot!r}")
        unknown = [k for k in robot if k not in slots]
        if unknown:
            raise ValueError(f"robot has slot(s) {unknown} that {task.__name__} does not declare; its robot "
                             f"slots are {list(slots)}")
        pairs = [(slot, robot[slot]) for slot in slots if slot in robot]
    elif isinstance(robot, str):
        pairs = [(slot if is_multi_robot(task) else None, robot) for slot in slots]
    else:
        raise TypeError(f"robot must be a robot name (str) such as {list_robots()}, a dict {{slot: name}} or "
                        f"None, got {robot!r} ({type(robot).__name__})")
    for slot, name in pairs:
        if not isinstance(name, str):
            raise TypeError(f"robot[{slot!r}] must be a robot name (str), got {type(name).__name__}")
        if slot is None:
            get_robot_spec(name)   # ValueError listing the known robots
        else:
            try:
                get_robot_spec(name)
            except ValueError as err:
                raise ValueError(f"robot[{slot!r}]: {err}") from None
        if check_one is not None:
            check_one(task, name, slot)
    return robot if isinstance(robot, str) else dict(pairs)


def check_control_mode_field(task: Any, control_mode: Any,
                             robot: str | dict[str, str] | None) -> str | dict[str, str] | None:
    """make's `control_mode=` for Task class `task`, validated and normalized: None (the
    task's default_control_mode), a mode name (every robot), or (multi-robot tasks) a
    dict {slot: mode} naming every slot, in slot order. `robot` is the validated robot
    field: each robot must support its mode (the default included). TypeError for a
    value of the wrong type, ValueError for an unknown/missing slot or mode."""
    slots = task_slots(task)
    multi = is_multi_robot(task)
    if isinstance(control_mode, dict):
        if not multi:
            raise ValueError(f"control_mode must be a control mode name for {task.__name__} (it places one robot), "
                             f"got the dict {control_mode!r}")
        unknown = [k for k in control_mode if k not in slots]
        missing = [k for k in slots if k not in control_mode]
        if unknown or missing:
            raise ValueError(f"control_mode as a dict must name every robot slot of {task.__name__}, {list(slots)}, "
                             f"and no other; got keys {list(control_mode)} (unknown: {unknown}, missing: {missing})")
        modes = {slot: control_mode[slot] for slot in slots}
        where = {slot: f"control_mode[{slot!r}]" for slot in slots}
    elif control_mode is None or isinstance(control_mode, str):
        modes = {slot: control_mode or task.default_control_mode for slot in slots}
        where = dict.fromkeys(slots, "control_mode")
    else:
        raise TypeError(f"control_mode must be a control mode name (str) such as {list(CONTROL_MODES)}, "
                        f"{'a dict {slot: mode} or ' if multi else ''}None, got {control_mode!r} "
                        f"({type(control_mode).__name__})")
    robots = resolved_robot(task, robot)
    for slot, mode in modes.items():
        if not isinstance(mode, str):
            raise TypeError(f"{where[slot]} must be a control mode name (str) such as {list(CONTROL_MODES)}, got "
                            f"{mode!r} ({type(mode).__name__})")
        if mode not in CONTROL_MODES:
            raise ValueError(f"{where[slot]} must be one of {list(CONTROL_MODES)}, got {mode!r}")
        name = robots[slot] if multi else robots
        supported = get_robot_spec(name).control_modes
        if mode not in supported:
            owner = f"robot {name!r}" + (f" (slot {slot!r})" if multi else "")
            default = "" if control_mode is not None else f" ({task.__name__}'s default_control_mode)"
            raise ValueError(f"{where[slot]} must be one that {owner} supports, one of {list(supported)}, "
                             f"got {mode!r}{default}")
    return dict(modes) if isinstance(control_mode, dict) else control_mode


def slot_control_modes(task: Any, control_mode: str | dict[str, str]) -> dict[str, str]:
    """{slot: mode} of a resolved control_mode field (a str: the same mode for every slot)."""
    return {slot: control_mode if isinstance(control_mode, str) else control_mode[slot] for slot in task_slots(task)}


def resolved_robot(task: Any, robot: str | dict[str, str] | None) -> str | dict[str, str]:
    """The robot field with the task's defaults written in: a name for a single-robot
    task, a full {slot: name} dict for a multi-robot task."""
    slots = task_slots(task)
    if not is_multi_robot(task):
        return robot or task.default_robot
    given = {slot: robot for slot in slots} if isinstance(robot, str) else dict(robot or {})
    return {slot: given.get(slot, s.default) for slot, s in slots.items()}


def build_robots(task: Any, robot: str | dict[str, str], control_mode: str | dict[str, str]) -> dict[str, Robot]:
    """{slot: Robot} (not yet loaded) for resolved robot and control_mode fields; each
    robot gets its own controller of its slot's mode. Multi-robot articulations are
    named "<slot>_<robot>"."""
    slots = task_slots(task)
    modes = slot_control_modes(task, control_mode)
    if not is_multi_robot(task):
        return {SINGLE_SLOT: Robot(get_robot_spec(robot), modes[SINGLE_SLOT], task.robot_base_position)}
    return {slot: Robot(get_robot_spec(robot[slot]), modes[slot], s.base_position, s.base_quat,
                        name=f"{slot}_{robot[slot]}") for slot, s in slots.items()}


def single_robot(robots: dict[str, Robot], owner: str) -> Robot:
    """The one robot of a single-robot env; ValueError for a multi-robot one."""
    if list(robots) == [SINGLE_SLOT]:
        return robots[SINGLE_SLOT]
    raise ValueError(f"{owner} places several robots ({list(robots)}): read them by slot from .robots[slot], "
                     f"there is no single .robot")


class ActionLayout:
    """The actions of several robots: a Dict space keyed by slot and its flat view.

    Built after the robots are loaded (their action bounds come from the joint limits)."""

    def __init__(self, robots: dict[str, Robot]):
        self.robots = robots
        self.dims = {slot: int(r.action_low.numel()) for slot, r in robots.items()}
        bounds = np.cumsum([0, *self.dims.values()])
        self.slices = {slot: slice(int(a), int(b)) for slot, a, b in zip(robots, bounds[:-1], bounds[1:])}
        self.flat_dim = int(bounds[-1])

    def flat_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) float32 (A,) of the flat action, slots concatenated in order."""
        low = np.concatenate([r.action_low.numpy() for r in self.robots.values()])
        high = np.concatenate([r.action_high.numpy() for r in self.robots.values()])
        return low.astype(np.float32), high.astype(np.float32)

    def dict_space(self) -> gym.spaces.Dict:
        """Single-env Dict space {slot: Box(action_dim,)} in slot order."""
        return gym.spaces.Dict({slot: gym.spaces.Box(r.action_low.numpy(), r.action_high.numpy(), dtype=np.float32)
                                for slot, r in self.robots.items()}, sort_keys=False)

    def flatten(self, action: dict) -> Any:
        """A {slot: (N, a_slot)} action -> (N, A), slots in order. ValueError naming a
        missing or unknown slot."""
        if set(action) != set(self.robots):
            raise ValueError(f"action must have one entry per robot slot {list(self.robots)}, got keys "
                             f"{list(action)}")
        parts = [torch.as_tensor(action[slot], dtype=torch.float32) for slot in self.robots]
        for slot, part in zip(self.robots, parts):
            if part.ndim != 2 or part.shape[1] != self.dims[slot]:
                raise ValueError(f"action[{slot!r}] must have shape (num_envs, {self.dims[slot]}), "
                                 f"got {tuple(part.shape)}")
        devices = {p.device for p in parts}
        return torch.cat([p.to(parts[0].device) for p in parts] if len(devices) > 1 else parts, dim=1)

    def split(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """(N, A) -> {slot: (N, a_slot)} views."""
        return {slot: flat[:, s] for slot, s in self.slices.items()}

    def apply(self, flat: torch.Tensor) -> None:
        """Give every robot its part of a clipped flat action (N, A)."""
        for slot, s in self.slices.items():
            self.robots[slot].apply_action(flat[:, s])
