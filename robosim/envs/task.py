"""Task plugin base class.

A task says what is in the scene, how an episode starts, what counts as success and
what the reward is. BaseEnv owns the robot, the controller, stepping, seeding and
spaces, and calls these hooks (named by when they run, as in dm_control's composer):

  build_scene(sim, rng)             at construction and on every reconfigure
  initialize_episode(env_idx, rng)  on reset, for the envs in env_idx only
  before_control_step(action)       each step, after the controller took the action,
                                    before the physics substeps (optional)
  after_control_step()              each step, after the physics substeps and the fault
                                    check, before elapsed_steps += 1 (optional)
  evaluate()                        after every step and reset -> info dict (and once
                                    at construction, to infer the observation space)
  dense_reward(info)                after evaluate, when reward_mode is dense/normalized
  task_observations(info)           extra obs entries (env frame)

A task receives a TaskContext (robosim.envs.context), not the env: `self.ctx` holds
num_envs, device, elapsed_steps, the robot and the current scene (`ctx.sim`);
`self.num_envs`, `self.device` and `self.robot` are short for its fields.
Only `evaluate` and `dense_reward` must be overridden. The two control-step hooks are
called only when the subclass overrides them (robosim.envs.base_env's step schedule).
All tensors are batched over all N envs unless a hook receives env_idx; positions are
in the env's own frame (m).
Register a task with `@robosim.register_task("MyTask-v1")` or through the
`robosim.tasks` entry point group.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from robosim.agents import (
    DEFAULT_ROBOT,
    Capabilities,
    Requirements,
    Robot,
    RobotSpec,
    get_robot_spec,
    list_robots,
    robot_capabilities,
)
from robosim.core.deprecation import REMOVED_IN
from robosim.envs.context import TaskContext
from robosim.randomization import BatchRandom
from robosim.sensors.camera import CameraConfig
from robosim.sim import SimScene


class Task:
    """Base class of task plugins. Class attributes are the task's defaults."""

    sim_freq: int = 100                 # physics substeps per second
    control_freq: int = 20              # control steps per second
    max_episode_steps: int = 50
    default_control_mode: str = "pd_ee_delta_pose"
    goal_conditioned: bool = False      # True: obs is {observation, achieved_goal, desired_goal}
    robot_base_position: tuple[float, float, float] | None = None   # env frame, m; None: the robot's own
    default_robot: str = DEFAULT_ROBOT        # robosim.make(..., robot=None) uses this one
    # what the task needs from a robot (robosim.agents.Requirements; a dict {slot:
    # Requirements} for a task with robot_slots): make accepts every robot that has it
    requires: Requirements | dict[str, Requirements] = Requirements()
    # the scripted solution's measured success per robot {name: fraction of episodes}
    # (the robots it was measured with; the docstring says how); {}: not measured
    scripted_success: dict[str, float] = {}
    max_dense_reward: float = 1.0       # normalized_dense = dense / max_dense_reward, in [-1, 0]
    # one-sentence natural-language goal, imperative ("Pick up the cube ..."): the task
    # string of LeRobot exports, for language-conditioned policies; "" when unset
    instruction: str = ""
    # cameras of the camera obs modes and render_mode="sensors" (env kwarg sensor_configs
    # overrides resolution, pose, ...); default: ManiSkill3's "base_camera" view
    sensor_cameras: tuple[CameraConfig, ...] = (
        CameraConfig.looking_at("base_camera", eye=(0.3, 0.0, 0.6), target=(-0.1, 0.0, 0.1)),
    )

    # keyword parameters users pass through make(task_id, name=value): {name: default};
    # each becomes an attribute of the task instance (self.name)
    parameters: dict[str, Any] = {}
    # the task's default render_mode="rgb_array" view (keys of robosim.sensors.camera.
    # HumanViewConfig: target_position, distance, yaw, pitch, ...); make's
    # render_camera and `robosim eval --camera` override it key by key
    human_camera: dict[str, Any] = {}
    # randomization events applied by default (robosim.randomization.events: plain dicts,
    # {name: {"mode", "target", "property", "dist", ...}}); make(randomization=...) edits them
    default_events: dict[str, dict] = {}
    # True when build_scene draws assets from its rng: a seeded full reset then rebuilds
    randomizes_build: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "supported_robots" in cls.__dict__:
            warnings.warn(f"{cls.__name__}.supported_robots is deprecated: declare what the task needs from a robot "
                          f"in `requires` (robosim.agents.Requirements) and the robots its scripted solution was "
                          f"measured with in `scripted_success`; supported_robots is still enforced until robosim "
                          f"{REMOVED_IN} removes it (docs/robots.md)", DeprecationWarning, stacklevel=2)

    def __init__(self, context: TaskContext, **params: Any):
        if not isinstance(context, TaskContext):
            raise TypeError(f"context must be a robosim.envs.context.TaskContext, got {type(context).__name__}")
        self.ctx = context
        for name, value in {**self.parameters, **params}.items():
            setattr(self, name, value)

    @classmethod
    def check_parameters(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Validate make()'s extra keyword arguments against `parameters`; returns them.

        Raises ValueError for an unknown name and TypeError for a value whose type does
        not match the default's (an int is accepted for a float)."""
        unknown = sorted(set(given) - set(cls.parameters))
        if unknown:
            accepted = sorted(cls.parameters) or "none"
            raise ValueError(f"{cls.__name__} does not take the keyword argument(s) {unknown}; "
                             f"its task parameters are {accepted} (plus robosim.make's own arguments)")
        for name, value in given.items():
            default = cls.parameters[name]
            expected = (int, float) if isinstance(default, float) else type(default)
            if default is not None and (isinstance(value, bool) != isinstance(default, bool)
                                        or not isinstance(value, expected)):
                raise TypeError(f"task parameter {name} of {cls.__name__} must be a {type(default).__name__} "
                                f"(default {default!r}), got {value!r}")
        return dict(given)

    @property
    def num_envs(self) -> int:
        """N (self.ctx.num_envs)."""
        return self.ctx.num_envs

    @property
    def device(self) -> torch.device:
        """Where every tensor of the env lives (self.ctx.device)."""
        return self.ctx.device

    @property
    def robot(self) -> Robot:
        """The robot (self.ctx.robot): qpos, qvel, tcp_pose(), is_between_jaws, ..."""
        return self.ctx.robot

    # -- hooks ------------------------------------------------------------------------
    def build_scene(self, sim: SimScene, rng: BatchRandom) -> None:
        """Add the task's actors to `sim` (one per env; `rng` draws per-env assets)."""

    def initialize_episode(self, env_idx: torch.Tensor, rng: BatchRandom) -> None:
        """Place robot and objects for the envs in env_idx (int64 (M,)); rng has M streams.

        Default: every robot (in slot order) at its rest pose with N(0, spec.rest_noise) rad
        noise on the arm joints."""
        for robot in self.ctx.robots.values():
            qpos = robot.rest_qpos(len(env_idx)).to(rng.device)
            qpos[:, robot.arm_start:robot.arm_start + robot.arm_dof] += rng.normal(0.0, robot.spec.rest_noise,
                                                                                  (robot.arm_dof,))
            robot.reset(qpos, env_idx)

    def before_control_step(self, action: torch.Tensor | None) -> None:
        """Each step, after the controller took `action` (float32 (N, A) clipped to the
        action space, or None for step(None)) and before the physics substeps: apply
        forces, perturb, or keep what after_control_step compares against."""

    def after_control_step(self) -> None:
        """Each step, after the physics substeps (faulted envs already restored) and
        before elapsed_steps += 1 and evaluate()."""

    @classmethod
    def overridden_step_hooks(cls) -> tuple[bool, bool]:
        """(before_control_step, after_control_step): whether this class overrides each
        (BaseEnv subscribes only those)."""
        return (cls.before_control_step is not Task.before_control_step,
                cls.after_control_step is not Task.after_control_step)

    def evaluate(self) -> dict[str, torch.Tensor]:
        """Return at least "success" and "fail", bool (N,), plus any task metrics."""
        raise NotImplementedError

    def dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """float32 (N,) shaped reward in [-max_dense_reward, 0], exactly 0 on success: a
        learner must never be paid more for hovering near success than for succeeding."""
        raise NotImplementedError

    def sparse_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """float32 (N,): 0 on success, -1 on every other step (panda-gym's convention;
        <= 0 with 0 on success, as dense_reward). Goal tasks' compute_reward agrees."""
        return info["success"].float() - 1.0

    def task_observations(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Task-specific obs entries, each (N, k) float32 in the env frame."""
        return {}

    # -- state the physics does not hold (goal positions, ...) ---------------------------
    def get_task_state(self) -> torch.Tensor:
        """float32 (N, k) task variables needed to restore an episode exactly."""
        return torch.zeros(self.num_envs, 0, device=self.device)

    def set_task_state(self, state: torch.Tensor, env_idx: torch.Tensor) -> None:
        """Inverse of get_task_state for the rows env_idx."""

    task_state_limit: float = 10.0   # |value| bound of every task-state entry (m, rad)

    def check_task_state(self, state: torch.Tensor, env_idx: torch.Tensor) -> None:
        """Raise ValueError naming the first bad entry of `state` (M, k) before anything is
        written: non-finite, or beyond +-task_state_limit (a goal of 1e30 m is absurd).
        Tasks whose variables have tighter bounds override this."""
        bad = (~torch.isfinite(state) | (state.abs() > self.task_state_limit)).nonzero()
        if len(bad):
            r, c = bad[0].tolist()
            raise ValueError(f"state row {r} task variable {c} must be finite and within "
                             f"+-{self.task_state_limit}, got {float(state[r, c]):.6g}")

    # -- goal-conditioned tasks (panda-gym's GoalEnv shape) ------------------------------
    def achieved_goal(self) -> torch.Tensor:
        raise NotImplementedError

    def desired_goal(self) -> torch.Tensor:
        raise NotImplementedError

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """Reward for arbitrary (..., goal_dim) goals, for hindsight relabeling."""
        raise NotImplementedError

    def solution_policy(self) -> Callable[..., torch.Tensor]:
        """A scripted policy (optional): called once per control step as `policy()` or
        `policy(obs)` (the obs is ignored) -> action float32 (N, A); it reads this task
        and its context, not the obs (usually a robosim.envs.solutions.PhasePolicy built
        with `self`). Raises NotImplementedError when the task has none."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted solution (solution_policy); "
                                  "evaluate it with --policy robosim.record.policies:random or your own module:factory")


def task_requirements(task_cls: type[Task], slot: str | None = None) -> Requirements:
    """The Requirements of `task_cls` for one robot slot (`slot` None: a single-robot
    task, or requirements that hold for every slot). ValueError for a slot the task's
    per-slot requirements do not name."""
    req = task_cls.requires
    if isinstance(req, Requirements):
        return req
    if not isinstance(req, dict) or not all(isinstance(r, Requirements) for r in req.values()):
        raise TypeError(f"{task_cls.__name__}.requires must be a robosim.agents.Requirements or a dict {{slot: "
                        f"Requirements}}, got {req!r}")
    if slot not in req:
        raise ValueError(f"slot must be one of the robot slots {task_cls.__name__}.requires names, {list(req)}, "
                         f"got {slot!r}")
    return req[slot]


def check_robot_for_task(task_cls: type[Task], robot: str | RobotSpec, slot: str | None = None) -> Capabilities:
    """Refuse a robot that lacks something `task_cls` needs (its `requires`, for `slot`
    of a multi-robot task); returns the robot's Capabilities. ValueError naming the
    robot, the task and each missing capability (what is needed, what the robot has),
    plus the registered robots that have them. Builds nothing."""
    spec = robot if isinstance(robot, RobotSpec) else get_robot_spec(robot)
    where = "robot" if slot is None else f"robot[{slot!r}]"
    legacy = getattr(task_cls, "supported_robots", None)
    if legacy is not None and spec.name not in legacy:   # deprecated (warned at class creation)
        raise ValueError(f"{where} must be one that {task_cls.__name__} supports, one of {list(legacy)}, "
                         f"got {spec.name!r}")
    req = task_requirements(task_cls, slot)
    caps = robot_capabilities(spec)
    missing = req.missing(caps, *_base_pose(task_cls, slot))
    if missing:
        able = robots_for_task(task_cls, slot)
        raise ValueError(f"{where} {spec.name!r} cannot run {task_cls.__name__}: the task {'; '.join(missing)}; "
                         f"registered robots that can: {able}")
    return caps


def robots_for_task(task_cls: type[Task], slot: str | None = None) -> list[str]:
    """Sorted names of the registered robots that meet `task_cls`'s requirements (for
    `slot`); a robot whose URDF cannot be read is left out."""
    req = task_requirements(task_cls, slot)
    legacy = getattr(task_cls, "supported_robots", None)
    able = []
    for name in list_robots():
        if legacy is not None and name not in legacy:
            continue
        try:
            if not req.missing(robot_capabilities(get_robot_spec(name)), *_base_pose(task_cls, slot)):
                able.append(name)
        except ValueError:
            continue
    return able


def _base_pose(task_cls: type[Task], slot: str | None) -> tuple[Any, Any]:
    """(base_position, base_quat) the task places the robot of `slot` at (None: the
    robot's own)."""
    slots = getattr(task_cls, "robot_slots", None) or {}
    if slot in slots:
        return slots[slot].base_position, slots[slot].base_quat
    return task_cls.robot_base_position, None
