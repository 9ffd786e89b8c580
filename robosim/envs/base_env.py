"""BaseEnv: a batched gymnasium.Env over N parallel envs of one task.

Step schedule (ManiSkill3's BaseEnv.step contract, seed 000), in this order:
  action -> clip -> controller (robot.apply_action)
  -> before_control_step(action) subscribers, in order: the fault monitor (after a
     reset or set_state, keeps the state to restore from), interval randomization
     events (EventManager: due ones fire), the task (Task.before_control_step)
  -> sim_freq / control_freq physics substeps
  -> after_control_step() subscribers, in order: the fault monitor (faulted envs
     restored, codes kept), the task (Task.after_control_step)
  -> elapsed_steps += 1 -> info = task.evaluate() -> obs -> reward
  -> terminated = success | fail, truncated = elapsed_steps >= max_episode_steps
Both hook points run before elapsed_steps += 1 (inside them it counts the steps done
before this one). A subscriber with nothing to do (a task that does not override a hook,
no interval event) is left out of the lists at build time: it costs nothing per step.
Action / observation terms of mode "step" (robosim.randomization) perturb the action
before the clip and the obs after it is built, only when declared. Every returned
tensor has leading dim N = num_envs and lives on `env.device`; the env never resets
itself (robosim.vector adds autoreset). The build makes one EnvParts (robosim.envs.parts)
for the stages that read the scene; BaseEnv is a BatchedEnv (robosim.envs.protocol).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch

from robosim.agents import Robot
from robosim.core.dispatch import below_autograd
from robosim.core.version import __version__
from robosim.envs import checks
from robosim.envs.context import TaskContext
from robosim.envs.faults import FaultMonitor, check_state
from robosim.envs.observations import ObservationBuilder
from robosim.envs.parts import EnvParts, SceneRecipe, build_parts
from robosim.envs.robots import SINGLE_SLOT, ActionLayout, build_robots, single_robot
from robosim.envs.spec import RENDER_MODES, EnvSpec, registered_id
from robosim.envs.task_checks import TaskOutputCheck
from robosim.randomization import EnvRandomStreams, StreamsSnapshot
from robosim.randomization.manager import EventManager
from robosim.sim import SimScene, backend_device, resolve_backend


class SavedState(NamedTuple):
    """What save_state keeps: get_state() (N, S) and what it does not hold."""

    state: torch.Tensor
    elapsed_steps: torch.Tensor
    event_timers: Any
    streams: StreamsSnapshot
    wrenches: Any
    welds: Any


class BaseEnv(gym.Env):
    """N envs of one Task, stepped together. See the module docstring for the pipeline."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 20}

    def __init__(self, spec: EnvSpec):
        """Build the env `spec` describes (robosim.make builds the spec from its keywords;
        every field was validated there, before anything is built)."""
        if not isinstance(spec, EnvSpec):
            raise TypeError(f"spec must be a robosim.EnvSpec (robosim.make builds one), got {type(spec).__name__}")
        self.env_spec = spec = spec.resolved()
        task = spec.task_class
        self.num_envs, self.obs_mode, self.reward_mode = spec.num_envs, spec.obs_mode, spec.reward_mode
        self.control_mode, self.sim_backend, self.render_mode = spec.control_mode, spec.sim_backend, spec.render_mode
        self.max_episode_steps, self.reconfiguration_freq = spec.max_episode_steps, spec.reconfiguration_freq
        self.physics_isolation, self.physics, self.render_size = spec.physics_isolation, spec.physics, spec.render_size
        # {slot: Robot} (robosim.envs.robots): checks the control mode and the URDFs before
        # anything is built; loaded in _build
        self.robots = build_robots(task, spec.robot, self.control_mode)
        self._robot = self.robots.get(SINGLE_SLOT) if len(self.robots) == 1 else None   # None: multi-robot
        self.substeps = task.sim_freq // task.control_freq
        self.device = backend_device(resolve_backend(spec.sim_backend), spec.sim_device)   # where every tensor lives
        self._recipe = SceneRecipe(spec.sim_backend, self.num_envs, task.sim_freq, task.control_freq, spec.physics,
                                   self.physics_isolation, self.device, spec.rig_spec(), tuple(task.sensor_cameras))
        self._rng = EnvRandomStreams(self.num_envs, self.device)
        self.elapsed_steps = torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        robots = self.robots if self._robot is None else self._robot
        self.task = task(TaskContext(self.num_envs, self.device, self.elapsed_steps, robots, lambda: self.parts,
                                     reward_mode=self.reward_mode), **spec.task_params)
        # declared randomization events (robosim.randomization): task defaults + make's
        self.randomization = EventManager(task.default_events, spec.randomization, self._rng,
                                          1.0 / task.control_freq, self.elapsed_steps)
        if spec.seed is not None:   # seeded from the first build on: assets of env i depend on (seed_i, build r)
            self._rng.seed(checks.to_seeds("seed", spec.seed, torch.arange(self.num_envs)), np.arange(self.num_envs))
        self._saved_states: dict[int, SavedState] = {}
        self._next_state_id = self._full_resets = 0
        self._task_check = TaskOutputCheck(type(self.task).__name__, self.num_envs, self.device)
        self.parts: EnvParts | None = None
        self._build()
        self._make_spaces()

    @property
    def task_params(self) -> dict[str, Any]:
        """The task's parameters (make's extra keywords), as validated."""
        return dict(self.env_spec.task_params)

    @property
    def robot(self) -> Robot:
        """The robot of a single-robot env (ValueError for a multi-robot one: use `robots`)."""
        return single_robot(self.robots, type(self.task).__name__)

    def _make_spaces(self) -> None:
        """Action space: the robot's Box, or (multi-robot) a Dict {slot: Box}; both with the
        flat Box view `single_flat_action_space` / `flat_action_space` (slots concatenated
        in order), which step also takes, and which recordings store."""
        if self._robot is None:
            self._action_layout: ActionLayout | None = ActionLayout(self.robots)
            low, high = self._action_layout.flat_bounds()
            self.single_action_space = self._action_layout.dict_space()
        else:
            self._action_layout = None
            low, high = self._robot.action_low.numpy(), self._robot.action_high.numpy()
            self.single_action_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.single_flat_action_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.flat_action_space = gym.vector.utils.batch_space(self.single_flat_action_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.single_observation_space = self._obs.single_space()
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.randomization.bind_spaces(self.single_observation_space, self.single_flat_action_space)
        self._action_low = torch.as_tensor(low, device=self.device)
        self._action_high = torch.as_tensor(high, device=self.device)
        self._action_shape = (self.num_envs, *self.single_flat_action_space.shape)

    # -- construction ------------------------------------------------------------------
    def _build(self) -> None:
        """(Re)build the whole scene (ground, robot, task actors, cameras) into new parts,
        then the stages that read it and the step's subscriber lists."""
        if self.parts is not None:
            self.parts.sim.close()
            self.parts = None
        build_rng = self._rng.next_build()
        parts = build_parts(self._recipe, self.robots, self.randomization.object_modifiers(),
                            self.task.build_scene, build_rng)
        if not self.task.randomizes_build and bool(build_rng.counters.any()):
            parts.sim.close()
            raise ValueError(f"{type(self.task).__name__}.build_scene drew from its rng but the task does not "
                             f"declare randomizes_build = True: set the class attribute randomizes_build = True "
                             f"(a seeded reset then rebuilds the assets), or draw per-episode values in "
                             f"initialize_episode instead")
        self.parts = parts
        self._faults = FaultMonitor(parts.sim, parts.state_layout)   # per-env fault check (envs/faults.py)
        self._obs = ObservationBuilder(parts, self.task, self.obs_mode)
        self.randomization.after_build(parts)
        # the step's subscribers, in call order (module docstring); no-op ones left out
        task_before, task_after = self.task.overridden_step_hooks()
        self._before_control_step = [s for s, on in ((self._faults, True),
                                                     (self.randomization, self.randomization.has_interval_events),
                                                     (self.task, task_before)) if on]
        self._after_control_step = [s for s, on in ((self._faults, True), (self.task, task_after)) if on]

    @property
    def sim(self) -> SimScene | None:
        """The built scene (None once closed)."""
        return None if self.parts is None else self.parts.sim

    cameras = property(lambda self: self.parts.cameras, doc="The built scene's CameraRig (robosim.sensors.rig).")
    human_camera = property(lambda self: self.parts.cameras.human, doc='The render_mode="rgb_array" camera or None.')

    # -- reset -----------------------------------------------------------------------
    @below_autograd
    def reset(self, *, seed: Any = None, options: dict | None = None):
        """Reset all envs, or only options["env_idx"]; see docs/design.md (Public contract).

        options: env_idx (int indices), reconfigure (bool: rebuild the scene; full
        reset only). Returns (obs, info) for all N envs."""
        self._check_open()
        options = {} if options is None else options
        if not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        unknown = set(options) - {"env_idx", "reconfigure"}
        if unknown:
            raise ValueError(f"options keys must be among ['env_idx', 'reconfigure'], got {sorted(unknown)}")
        partial = "env_idx" in options and options["env_idx"] is not None
        if partial:
            env_idx = checks.to_env_index("options['env_idx']", options["env_idx"], self.num_envs, torch.device("cpu"))
        else:
            env_idx = torch.arange(self.num_envs)
        seeds = checks.to_seeds("seed", seed, env_idx)
        reconfigure = checks.to_bool("options['reconfigure']", options.get("reconfigure", False))
        if reconfigure and partial:
            raise ValueError("options['reconfigure'] rebuilds every env; it cannot be combined with options['env_idx']")

        idx_np = env_idx.numpy()
        # gymnasium's own np_random (unused by robosim's per-env streams; kept for tools)
        super().reset(seed=seeds[0] if seeds is not None else None)
        if seeds is not None:
            self._rng.seed(seeds, idx_np)
            if not partial and self._randomizes_build and self._rng.seeds_changed_since_build():
                self._rng.restart_builds()     # assets of a seeded full reset: build 0 of the new seeds
                reconfigure = True
        if not partial:
            if self.reconfiguration_freq and self._full_resets % self.reconfiguration_freq == 0 and self._full_resets:
                reconfigure = True
            self._full_resets += 1
        if reconfigure:
            self._build()
        self.elapsed_steps[env_idx.to(self.device)] = 0
        episode_rng = self._rng.next_episode(idx_np)
        self.parts.sim.clear_wrenches(env_idx)   # held forces end with the episode; reset events draw new ones
        self.randomization.before_episode(env_idx)
        self.task.initialize_episode(env_idx.to(self.device), episode_rng)
        self.randomization.on_reset(env_idx)
        self.sim.forget_history(env_idx)   # separate mode: no cache of the past survives a reset
        self._faults.states_written(env_idx.to(self.device), f"{type(self.task).__name__}.initialize_episode")
        info = self._evaluate()
        info["sim_fault"] = torch.zeros(self.num_envs, dtype=torch.int8, device=self.device)
        info["reconfigure"] = torch.full((self.num_envs,), reconfigure, dtype=torch.bool, device=self.device)
        obs = self._obs.build(info)
        if self.randomization.perturbs_observations:
            obs = self.randomization.perturb_observation(obs)
        if self._task_check.active:
            self._task_check.after("reset", info, obs, self.single_observation_space, self.task)
        return obs, info

    # -- step -------------------------------------------------------------------------
    @below_autograd
    def step(self, action: Any):
        """Advance every env by one control step. `action` (N, A) float, or None to
        advance time without touching the drive targets; a multi-robot env also takes a
        dict {slot: (N, a_slot)} (A: the flat view, slots concatenated in order)."""
        self._check_open()
        if action is not None:
            if self._action_layout is not None and isinstance(action, dict):
                action = self._action_layout.flatten(action)
            action = checks.to_float_tensor("action", action, self._action_shape, self.device)
            if self.randomization.perturbs_actions:   # action noise: before the clip
                action = self.randomization.perturb_action(action)
            action = torch.clamp(action, self._action_low, self._action_high)
            if self._robot is not None:
                self._robot.apply_action(action)
            else:
                self._action_layout.apply(action)
        for subscriber in self._before_control_step:
            subscriber.before_control_step(action)
        sim = self.parts.sim
        for _ in range(self.substeps):
            sim.step()
        for subscriber in self._after_control_step:
            subscriber.after_control_step()
        fault = self._faults.fault.to(self.device)   # faulted envs already restored
        self.elapsed_steps += 1
        info = self._evaluate()
        info["sim_fault"] = fault                              # int8 code, faults.FAULT_NAMES
        if self._faults.any_fault:
            info["fail"] = info["fail"] | (fault > 0)
        obs = self._obs.build(info)
        if self.randomization.perturbs_observations:
            obs = self.randomization.perturb_observation(obs)
        reward = self._reward(info)
        if self._task_check.active:
            self._task_check.after("step", info, obs, self.single_observation_space, self.task,
                                   reward, self.reward_mode)
        terminated = info["success"] | info["fail"]
        truncated = self.elapsed_steps >= self.max_episode_steps
        return obs, reward, terminated, truncated, info

    @below_autograd
    def observe(self) -> tuple[Any, dict[str, Any]]:
        """(obs, info) of the envs' current state, built as reset and step build theirs
        (e.g. after set_state): obs in observation_space, every tensor (N, ...) on
        `device`; info: the task's evaluate() keys, elapsed_steps and is_success (not the
        per-call sim_fault, reconfigure). Declared observation noise is applied: its draw is
        keyed by (env seed, episode, elapsed_steps), so it is the noise reset/step gave at
        this step. Steps nothing and changes nothing (state, elapsed_steps, random streams)."""
        self._check_open()
        info = self._evaluate()
        obs = self._obs.build(info)
        if self.randomization.perturbs_observations:
            obs = self.randomization.perturb_observation(obs)
        return obs, info

    def _evaluate(self) -> dict[str, Any]:
        info = self.task.evaluate()
        if self._task_check.active:   # first reset and step only
            self._task_check.check_info(info)
        info["elapsed_steps"] = self.elapsed_steps.clone()
        info["is_success"] = info["success"]  # the key SB3 and panda-gym read
        return info

    def _reward(self, info: dict[str, Any]) -> torch.Tensor:
        if self.reward_mode == "sparse":
            return self.task.sparse_reward(info)
        if self.reward_mode == "none":
            return torch.zeros(self.num_envs, device=self.device)
        dense = self.task.dense_reward(info)
        return dense if self.reward_mode == "dense" else dense / self.task.max_dense_reward

    def compute_reward(self, achieved_goal, desired_goal, info):
        """Goal-conditioned tasks only: reward of arbitrary goal pairs (HER relabeling)."""
        if not self.task.goal_conditioned:
            raise AttributeError(f"{type(self.task).__name__} is not goal-conditioned")
        return self.task.compute_reward(achieved_goal, desired_goal, info)

    def header(self) -> dict[str, Any]:
        """How to rebuild this env, JSON-able (robosim.envs.protocol: what trajectory
        files store): `env_spec` is the resolved EnvSpec with the asset build seeds as its
        seed, so robosim.envs.spec.make_env rebuilds the same assets and physics.
        ValueError when the task class is not registered."""
        spec = self.env_spec.replace(seed=self.build_seeds, device=None)
        return dict(robosim_version=__version__, task_id=registered_id(type(self.task)), env_spec=spec.to_dict(),
                    num_envs=self.num_envs, state_dim=self.state_dim,
                    action_dim=int(self.single_flat_action_space.shape[0]), sim_backend=self.sim_backend,
                    control_mode=self.control_mode, control_freq=self.task.control_freq)

    # -- state -------------------------------------------------------------------------
    @property
    def state_dim(self) -> int:
        return self.sim.state_dim + self.task.get_task_state().shape[1]

    def get_state(self) -> torch.Tensor:
        """float32 (N, state_dim): physics state then task state, env frame."""
        return torch.cat([self.sim.get_state(), self.task.get_task_state()], dim=1)

    def set_state(self, state: Any, env_idx: Any = None) -> None:
        """Write `state` (M, state_dim) into env_idx (all N envs when None)."""
        idx = (torch.arange(self.num_envs) if env_idx is None
               else checks.to_env_index("env_idx", env_idx, self.num_envs, torch.device("cpu")))
        state = checks.to_float_tensor("state", state, (len(idx), self.state_dim), torch.device("cpu"))
        physics = self.sim.state_dim
        check_state(self._faults.layout, state[:, :physics], idx)   # absurd values never reach PhysX
        self.sim.check_state(state[:, :physics])                     # e.g. a pool's variant index
        self.task.check_task_state(state[:, physics:], idx)          # e.g. a goal of 1e30 m
        self.sim.set_state(state[:, :physics], idx)
        self.task.set_task_state(state[:, physics:].to(self.device), idx.to(self.device))   # task tensors live there
        self.sim.forget_history(idx)   # separate mode: the written state alone decides the future
        self._faults.states_written()

    def save_state(self) -> int:
        """Snapshot all envs; returns an id for restore_state/remove_state (panda-gym).

        The snapshot holds get_state() and what get_state does not: elapsed_steps, the
        interval-event timers, held wrenches, which welds hold (sim.weld_snapshot) and the
        episode counters. It is also written back: PhysX keeps solver state that get_state
        cannot read and every write resets, so only then do the run after save_state and
        the run after restore_state start alike
        (bit for bit with physics_isolation="separate"; docs/reliability.md)."""
        state_id = self._next_state_id
        state = self.get_state().clone()
        self.set_state(state)
        self._saved_states[state_id] = SavedState(state, self.elapsed_steps.clone(), self.randomization.get_timers(),
                                                  self._rng.snapshot(), self.sim.wrench_snapshot(),
                                                  self.sim.weld_snapshot())
        self._next_state_id += 1
        return state_id

    def restore_state(self, state_id: int) -> None:
        """Put every env back to snapshot `state_id` (physics, task, elapsed_steps, timers)."""
        if isinstance(state_id, bool) or state_id not in self._saved_states:
            raise ValueError(f"state_id must be an id returned by save_state, got {state_id!r}")
        saved = self._saved_states[state_id]
        self.sim.restore_welds(saved.welds)   # before set_state: its re-anchoring holds the saved poses
        self.set_state(saved.state)
        self.sim.restore_wrenches(saved.wrenches)
        self.elapsed_steps.copy_(saved.elapsed_steps)
        self.randomization.set_timers(saved.event_timers)
        self._rng.restore(saved.streams)

    def remove_state(self, state_id: int) -> None:
        if state_id not in self._saved_states:
            raise ValueError(f"state_id must be an id returned by save_state, got {state_id!r}")
        del self._saved_states[state_id]

    # -- render / close ------------------------------------------------------------------
    def render(self) -> torch.Tensor | None:
        """uint8 (N, H, W, 3) frames of the human-view camera (render_mode="rgb_array"),
        or the sensor cameras' rgb and depth side by side (render_mode="sensors")."""
        if self.render_mode is None:
            return None
        if self.render_mode == "sensors":
            return self.cameras.render_sensors()
        return self.human_camera.capture()

    @property
    def build_seeds(self) -> list[int]:
        """The per-env base seeds the current scene's build draws came from (make(seed=...)
        with this list rebuilds the same assets)."""
        return [int(v) for v in self._rng.build_seeds.tolist()]

    @property
    def _randomizes_build(self) -> bool:
        """True when a rebuild can give other assets: the task draws at build time, or a
        "reconfigure" event is declared."""
        return self.task.randomizes_build or self.randomization.randomizes_build

    def _check_open(self) -> None:
        if self.parts is None:
            raise RuntimeError(f"this {type(self.task).__name__} env was closed; make a new one")

    def close(self) -> None:
        """Release the scene; safe to call twice."""
        if self.parts is not None:
            self.parts.sim.close()
            self.parts = None
