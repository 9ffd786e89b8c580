"""Scripted solutions: the API a task's `solution_policy()` builds on.

A scripted solution is a per-env phase machine that reads the simulator's ground truth
(object poses, goals; never the observation) and emits end-effector deltas for the
`pd_ee_delta_pos` / `pd_ee_delta_pose` control modes.

Protocol (`PhasePolicy`):

- `policy = MyPolicy(task)` (in `Task.solution_policy`: `MyPolicy(self)`); then each
  control step `action = policy()` or `policy(obs)` (the obs is ignored, so the policy
  plugs in wherever `policy(obs) -> action` is expected) gives float32 (N, A) for all N
  envs. The policy reads `self.task` (its objects, goals) and `self.ctx`, the task's
  TaskContext (robot, elapsed_steps), never the env.
- `policy()` first restarts the phase (int64 (N,), 0) and the time in phase (int64
  (N,), control steps) of every env whose episode just restarted
  (`ctx.elapsed_steps == 0`), so one policy object serves across resets and partial
  resets; then calls `act() -> (action (N, A), next_phase (N,) int64)`; an env whose
  phase changes has its timer set to 0, the others' timers count up by one.
- `act()` reads `self.phase` and `self.timer` and must not modify them.

All positions are in the env's own frame (m), rotations are (N, 3, 3) matrices in the
env frame, angles in radians. docs/writing-tasks.md ("Writing a scripted solution")
walks through an example (tests/envs/test_task_authoring.py::test_scripted_solution_example).
"""
from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import torch

from robosim.agents import Robot
from robosim.core.deprecation import REMOVED_IN, moved_names
from robosim.core.rotations import axis_angle_matrix, matmul3, quat_to_matrix, quat_yaw, rotation_log, wrap_angle
from robosim.envs.robots import is_multi_robot

if TYPE_CHECKING:
    from robosim.envs.task import Task
    from robosim.sim import ActorView

EE_CONTROL_MODES = ("pd_ee_delta_pos", "pd_ee_delta_pose")
# the error (m, rad) that ee_action maps to a full-scale (+-1) command
POS_FULL_SCALE = 0.1
ROT_FULL_SCALE = 0.1

# Gripper pointing down (tcp z axis along env -z), fingers along env y at yaw 0.
_DOWN = torch.tensor([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]], dtype=torch.float64)


# -- pose helpers ---------------------------------------------------------------------
def grasp_rotation(object_yaw: torch.Tensor, symmetry: float = math.pi / 2) -> torch.Tensor:
    """float64 (N, 3, 3) downward gripper rotations (tcp z along env -z) aligned with an
    object's faces: its yaw (N,) rad folded to [-symmetry/2, symmetry/2) (a cube looks the
    same every quarter turn: pi/2; a bar every half turn: pi)."""
    yaw = wrap_angle(object_yaw.double(), symmetry)
    axis = yaw.new_tensor([0.0, 0.0, 1.0])
    return matmul3(axis_angle_matrix(axis, yaw), _DOWN.to(yaw.device).expand(len(yaw), 3, 3))


# -- actions --------------------------------------------------------------------------
def ee_action(robot: Robot, target_pos: torch.Tensor, target_rot: torch.Tensor | None,
              gripper: torch.Tensor) -> torch.Tensor:
    """float32 (N, A) action moving the tcp toward target_pos (N, 3) (env frame, m).

    Position part: (target_pos - tcp) / POS_FULL_SCALE (0.1 m) clipped to [-1, 1] (the
    controller scales +-1 to its largest step). In pd_ee_delta_pose the rotation part
    turns the tcp toward target_rot (N, 3, 3) (env frame; None keeps the current one):
    the rotation error as axis-angle (rad) / ROT_FULL_SCALE (0.1 rad), clipped to [-1, 1];
    pd_ee_delta_pos ignores target_rot. gripper (N,) in [-1, 1]: -1 closes, 1 opens.
    Raises ValueError when robot.control_mode is any other mode."""
    robot = _deprecated_env_argument(robot, "robot", Robot, "ee_action(env, ...)", "ee_action(env.robot, ...)")
    if robot.control_mode not in EE_CONTROL_MODES:
        raise ValueError(f"scripted policies need the robot's control_mode in {EE_CONTROL_MODES}, "
                         f"got {robot.control_mode!r} (robot {robot.name!r})")
    tcp = robot.tcp_pose()
    pos_action = torch.clamp((target_pos - tcp[:, :3]) / POS_FULL_SCALE, -1.0, 1.0)
    parts = [pos_action]
    if robot.control_mode == "pd_ee_delta_pose":
        current = quat_to_matrix(tcp[:, 3:].double())
        target = current if target_rot is None else target_rot
        rot_err = rotation_log(matmul3(target, current.transpose(-1, -2))).float()
        parts.append(torch.clamp(rot_err / ROT_FULL_SCALE, -1.0, 1.0))
    parts.append(gripper.reshape(-1, 1).float())
    return torch.cat(parts, dim=1)


def grip_flags(gap: torch.Tensor, open_gap: float, to_point: torch.Tensor,
               close_within: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(holding, close), bool (N,), from the jaw gap (N,) m, the gap fully open (m) and the
    tcp's distance (N,) m from the point to grasp. holding: the gap between 2 mm and the
    open gap - 1 cm, the point within 2 cm; close: not holding, the jaws not shut on
    nothing (gap > 2 mm), the point within `close_within` m (15 mm once the jaws have
    started closing, gap below the open gap - 5 mm)."""
    holding = (gap > 0.002) & (gap < open_gap - 0.01) & (to_point < 0.02)
    closing = gap < open_gap - 0.005
    close = ~holding & (gap > 0.002) & ((to_point < close_within) | (closing & (to_point < 0.015)))
    return holding, close


def carry_over_the_top(place: torch.Tensor, held: torch.Tensor, half: float, carry_above: float,
                       carry_z: float = 0.0) -> torch.Tensor:
    """float32 (N, 3): where to carry a held object's centre `held` (N, 3) on its way to
    `place` (N, 3) (env frame, m) so that it arrives from above, clear of what stands
    between: `carry_above` m over the place (its centre at least `carry_z` m off the
    ground) while it is 2 cm or more from the place in xy, lowered onto the place from 2 cm
    to 5 mm away. Further than 2 cm away its xy advance grows with the square of how far
    it has risen, from its bottom 2 cm off the ground (`half`: its half height, m) to
    1 cm below the carry height, so it lifts before it travels. The target is exactly
    `place` within 5 mm, so "within d of the place" tests keep their meaning there."""
    carry = torch.clamp(place[:, 2:3] + carry_above, min=carry_z)
    off = (place - held)[:, :2].norm(dim=1, keepdim=True)
    height = place[:, 2:3] + (carry - place[:, 2:3]) * ((off - 0.005) / 0.015).clamp(0.0, 1.0)
    risen = ((held[:, 2:3] - half - 0.02) / (carry - half - 0.03)).clamp(0.0, 1.0) ** 2
    xy = torch.where(off > 0.02, held[:, :2] + risen * (place[:, :2] - held[:, :2]), place[:, :2])
    return torch.cat([xy, height], 1)


class PhasePolicy:
    """Base of phase-machine policies (protocol: the module docstring).

    Attributes: task (the Task it solves), ctx (the task's TaskContext), robot
    (ctx.robot; None for a multi-robot task), robots (ctx.robots, {slot: Robot}),
    phase int64 (N,), timer int64 (N,) (control steps in the current
    phase). Subclasses implement `act()`."""

    def __init__(self, task: Task):
        from robosim.envs.task import Task

        task = _deprecated_env_argument(task, "task", Task, f"{type(self).__name__}(env)",
                                        f"{type(self).__name__}(env.task)")
        self.task = task
        self.ctx = task.ctx
        self.robots = task.ctx.robots   # {slot: Robot}
        # a multi-robot task's policy reads self.robots[slot]
        self.robot = None if is_multi_robot(type(task)) else task.ctx.robot
        n, device = task.ctx.num_envs, task.ctx.device
        self.phase = torch.zeros(n, dtype=torch.int64, device=device)
        self.timer = torch.zeros(n, dtype=torch.int64, device=device)

    def __call__(self, obs: Any = None) -> torch.Tensor:
        """float32 (N, A): the action of this control step for every env. `obs` is
        ignored (the policy reads the simulator's ground truth)."""
        fresh = self.ctx.elapsed_steps == 0
        self.phase[fresh] = 0
        self.timer[fresh] = 0
        action, next_phase = self.act()
        changed = next_phase != self.phase
        self.timer = torch.where(changed, torch.zeros_like(self.timer), self.timer + 1)
        self.phase = next_phase
        return action

    def open_jaw_gap(self) -> float:
        """The jaw gap (m) of self.robot with every gripper joint at its spec's `open` position."""
        qpos = self.robot.qpos[:1].clone()
        qpos[:, self.robot.arm_start + self.robot.arm_dof:] = self.robot.spec.gripper.open
        return float(self.robot.gripper_width(qpos)[0])

    def act(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(action float32 (N, A), next_phase int64 (N,)) from self.phase and self.timer."""
        raise NotImplementedError(f"{type(self).__name__} must implement act() -> (action, next_phase)")


class PickAndPlacePolicy(PhasePolicy):
    """Grasp an object from above, then carry it so that its centre reaches `place_target()`.

    Subclasses give `cube()` (the ActorView to pick; or override `object_pose()` when
    envs pick different objects) and `place_target()` float32 (N, 3) (env frame, m),
    both called once per step, `place_target()` first. The phase is decided afresh
    every step from the state alone (tcp, object and target positions and the jaw gap:
    all in a state observation), never from the history, so the same state always gets
    the same action: a learner imitating it sees one label per state, and a perturbed
    episode (DART noise, a slip) is picked up from where it is. Phases: 0 to `lift` m
    above the object, 1 down to it, 2 close, 3 carry; with `release = True` also 4 open
    over the target, 5 rise.

    - holding: the jaw gap between 2 mm and the open gap - 1 cm, the tcp within 2 cm of
      the object's centre;
    - close: not holding, the tcp within 1 cm of the object's centre (15 mm once the
      jaws have started closing) and the jaws not shut on nothing (gap > 2 mm);
    - down: the tcp within 15 mm of the point above the object horizontally and at most
      15 mm above it;
    - released (`release`): the object within `released_within` (15 mm) of the target
      and not held; open until the gap is within 5 mm of the open gap, then rise to 8 cm
      above the target, keeping the tcp's xy. A held object within 6 mm of the target is
      let go;
    - held at the target (`release = False`, within 1 cm): the gripper command is the
      robot's `spec.gripper.hold` (-1, the full squeeze, for most robots)."""

    lift = 0.08        # m above the object's centre to approach from
    release = False    # True: open and rise after placing
    released_within = 0.015   # m: an unheld object this close to the target counts as placed
    symmetry = math.pi / 2   # rad: the object looks the same after this turn about z

    def __init__(self, task: Task):
        super().__init__(task)
        self._open_gap = self.open_jaw_gap()   # m

    def cube(self) -> ActorView:
        raise NotImplementedError(f"{type(self).__name__} must implement cube() -> the ActorView to pick")

    def place_target(self) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement place_target() -> (N, 3)")

    def object_pose(self) -> torch.Tensor:
        """float32 (N, 7): the pose (env frame; m, quaternion wxyz) of each env's object to pick."""
        return self.cube().pose()

    def act(self) -> tuple[torch.Tensor, torch.Tensor]:
        robot = self.robot
        place = self.place_target()
        cube_pose = self.object_pose()
        cube_pos = cube_pose[:, :3]
        tcp_pose = robot.tcp_pose()
        tcp = tcp_pose[:, :3]
        gap = robot.gripper_width(robot.qpos)
        to_cube = (cube_pos - tcp).norm(dim=1)
        holding, close = grip_flags(gap, self._open_gap, to_cube, close_within=0.01)
        above = cube_pos + cube_pos.new_tensor([0.0, 0.0, self.lift])
        over = ((above - tcp)[:, :2].norm(dim=1) < 0.015) & (tcp[:, 2] < above[:, 2] + 0.015)
        phase = torch.where(over, 1, 0)
        phase = torch.where(close, 2, phase)
        phase = torch.where(holding, 3, phase)
        # carry so that the cube (not the tcp) reaches the target: keep the grasp offset
        goal = place + (tcp - cube_pos) * holding.unsqueeze(1)
        if self.release:
            on_target = (cube_pos - place).norm(dim=1)
            let_go = holding & (on_target < 0.006)
            released = ~holding & (on_target < self.released_within)
            opened = gap > self._open_gap - 0.005
            phase = torch.where(let_go | (released & ~opened), 4, phase)
            phase = torch.where(released & opened, 5, phase)
        # down to 5 mm below the centre, so the tcp still moves when it comes within the 1 cm
        # that closes the jaws (aimed at the centre, it would slow down as it nears it)
        low = cube_pos - cube_pos.new_tensor([0.0, 0.0, 0.005])
        target = torch.where((phase == 0).unsqueeze(1), above, torch.where((phase == 1).unsqueeze(1), low, cube_pos))
        target = torch.where((phase == 3).unsqueeze(1), goal, target)
        if self.release:
            target = torch.where((phase == 4).unsqueeze(1), tcp, target)
            lifted = torch.cat([tcp[:, :2], place[:, 2:3] + 0.08], 1)
            target = torch.where((phase == 5).unsqueeze(1), lifted, target)
        # align with the cube's nearest face pair, the smallest turn from the wrist's current
        # yaw (so a turn once begun is continued, whichever way it began); once closing on
        # it, keep the current wrist rotation (aligning to a yaw the grasp itself changes
        # would chase its own tail)
        tcp_yaw = quat_yaw(tcp_pose[:, 3:].double())
        yaw = tcp_yaw + wrap_angle(quat_yaw(cube_pose[:, 3:].double()) - tcp_yaw, self.symmetry)
        keep = (phase >= 2).reshape(-1, 1, 1)
        grasp_rot = torch.where(keep, quat_to_matrix(tcp_pose[:, 3:].double()),
                                grasp_rotation(yaw, symmetry=2 * math.pi))
        gripper = torch.where((phase == 2) | (phase == 3), -1.0, 1.0)
        if not self.release:   # held at the target: the robot's hold command (RobotSpec.gripper.hold)
            at_target = holding & ((cube_pos - place).norm(dim=1) < 0.01)
            gripper = torch.where(at_target, robot.spec.gripper.hold, gripper)
        return ee_action(robot, target, grasp_rot, gripper), phase


# -- names and call forms of robosim 0.1.0 (docs/api.md: they warn for one release) ------
def _deprecated_env_argument(given: Any, attribute: str, expected: type, old: str, new: str) -> Any:
    """`given` when it is an `expected`; an env's `.<attribute>` with a DeprecationWarning
    (0.1.0 passed the env); TypeError naming `attribute` otherwise."""
    if isinstance(given, expected):
        return given
    inner = getattr(given, attribute, None)
    if isinstance(inner, expected):
        warnings.warn(f"{old} is deprecated: call {new}; the env form will be removed in robosim {REMOVED_IN} "
                      f"(docs/api.md)", DeprecationWarning, stacklevel=3)
        return inner
    raise TypeError(f"{attribute} must be a {expected.__module__}.{expected.__name__}, got {type(given).__name__}")


def is_grasped(robot: Robot, qpos: torch.Tensor, obj_pos: torch.Tensor, half: float,
               tcp_to_obj: torch.Tensor | None = None) -> torch.Tensor:
    """Deprecated (robosim 0.1.0): `robot.is_between_jaws(obj_pos, half, tcp_to_obj)`, which
    reads the robot's current qpos (`qpos` is ignored: 0.1.0's callers passed it)."""
    warnings.warn(f"robosim.envs.solutions.is_grasped is deprecated: call robot.is_between_jaws(obj_pos, "
                  f"half_width, tcp_to_obj); it will be removed in robosim {REMOVED_IN} (docs/api.md)",
                  DeprecationWarning, stacklevel=2)
    return robot.is_between_jaws(obj_pos, half, tcp_to_obj)


__getattr__ = moved_names(__name__, {"yaw_quat": "robosim.core.rotations:yaw_quat"})
