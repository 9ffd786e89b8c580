"""TaskContext: what a task (and its scripted solution) acts on, instead of the env.

BaseEnv builds one per task, before the first scene is built, and keeps it for the
env's life. It holds what stays fixed (num_envs, device, the robot, the reward mode, the
elapsed-steps tensor, which the env updates in place) and reads what a rebuild replaces
(`parts`: the current EnvParts) through a callable, so a task never holds a stale scene.
Nothing here can step, reset or reconfigure the env.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from robosim.agents import Robot
from robosim.envs.parts import EnvParts
from robosim.envs.robots import SINGLE_SLOT, single_robot
from robosim.sim import SimScene


class TaskContext:
    """A task's view of its env.

    num_envs: N. device: where every tensor of the env lives. elapsed_steps: int32 (N,)
    on `device`, control steps since each env's last reset (the env's own tensor,
    updated in place: 0 right after a reset; inside before/after_control_step it counts
    the steps done before this one). robot: the robosim.agents Robot (readouts: qpos,
    qvel, tcp_pose(), is_grasping, is_between_jaws, is_static; poses in the env frame)
    of a single-robot task; robots: {slot: Robot} (robosim.envs.robots; a single-robot
    task's one robot under SINGLE_SLOT). A multi-robot task reads `robots[slot]`:
    `robot` raises ValueError there rather than pick one.
    parts: `parts()` returns the current EnvParts, or None while the first scene is
    being built or after close. reward_mode: the env's ("dense", "normalized_dense",
    "sparse" or "none")."""

    def __init__(self, num_envs: int, device: torch.device, elapsed_steps: torch.Tensor,
                 robot: Robot | dict[str, Robot],
                 parts: Callable[[], EnvParts | None], *, reward_mode: str = "dense"):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if not isinstance(device, torch.device):
            raise TypeError(f"device must be a torch.device, got {type(device).__name__} {device!r}")
        if not (isinstance(elapsed_steps, torch.Tensor) and elapsed_steps.dtype == torch.int32
                and elapsed_steps.shape == (num_envs,) and elapsed_steps.device.type == device.type
                and device.index in (None, elapsed_steps.device.index)):
            given = (f"{elapsed_steps.dtype} {tuple(elapsed_steps.shape)} on {elapsed_steps.device}"
                     if isinstance(elapsed_steps, torch.Tensor) else type(elapsed_steps).__name__)
            raise TypeError(f"elapsed_steps must be an int32 tensor of shape ({num_envs},) on {device}, got {given}")
        robots = robot if isinstance(robot, dict) else {SINGLE_SLOT: robot}
        if not robots or not all(isinstance(r, Robot) for r in robots.values()):
            raise TypeError(f"robot must be a robosim.agents.Robot, got {type(robot).__name__} (a multi-robot "
                            f"task's: a non-empty dict {{slot: Robot}})")
        if not callable(parts):
            raise TypeError(f"parts must be a callable returning the current EnvParts, got {type(parts).__name__}")
        if not isinstance(reward_mode, str):   # its value is checked by the env that passes it
            raise TypeError(f"reward_mode must be a str, got {type(reward_mode).__name__}")
        self._num_envs, self._device, self._elapsed_steps = num_envs, device, elapsed_steps
        self._robots, self._parts, self._reward_mode = robots, parts, reward_mode
        self._robot = robots[SINGLE_SLOT] if list(robots) == [SINGLE_SLOT] else None   # read on every step

    num_envs = property(lambda self: self._num_envs, doc="N, the number of envs.")
    device = property(lambda self: self._device, doc="torch.device of every env tensor.")
    elapsed_steps = property(lambda self: self._elapsed_steps,
                             doc="int32 (N,): control steps since each env's reset (the env's own tensor: read only).")
    robots = property(lambda self: dict(self._robots), doc="{slot: robosim.agents.Robot}, in slot order.")

    @property
    def robot(self) -> Robot:
        """The robosim.agents.Robot of a single-robot task (ValueError for a multi-robot one)."""
        if self._robot is None:
            single_robot(self._robots, "this task")   # the ValueError naming the slots
        return self._robot
    reward_mode = property(lambda self: self._reward_mode, doc="The env's reward mode.")

    @property
    def parts(self) -> EnvParts:
        """The current EnvParts (a new one after every rebuild: read it when needed,
        never keep it). RuntimeError while none is built (inside the first build_scene,
        which receives its `sim` directly, or after close)."""
        parts = self._parts()
        if parts is None:
            raise RuntimeError("no scene is built: the env is building its first scene (build_scene gets it as "
                               "`sim`) or was closed")
        return parts

    @property
    def sim(self) -> SimScene:
        """The current SimScene (`parts.sim`): views, contacts, welds, collisions."""
        return self.parts.sim
