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

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robosim.agents import CONTROL_MODES, Robot, get_robot_spec
from robosim.core.dispatch import below_autograd
from robosim.envs import checks
from robosim.envs.faults import FaultMonitor, check_state
from robosim.envs.observations import CAMERA_OBS_MODES, OBS_MODES, ObservationBuilder
from robosim.envs.parts import EnvParts, SceneRecipe, build_parts
from robosim.envs.task import Task
from robosim.envs.task_checks import TaskOutputCheck
from robosim.randomization import EnvRandomStreams
from robosim.randomization.manager import EventManager
from robosim.sensors.rig import RigSpec
from robosim.sim import SIM_BACKENDS, PhysicsConfig, SimScene, backend_device, resolve_backend
from robosim.sim.isolation import check_isolation

REWARD_MODES = ("dense", "normalized_dense", "sparse", "none")
RENDER_MODES = ("rgb_array", "sensors")


class BaseEnv(gym.Env):
    """N envs of one Task, stepped together. See the module docstring for the pipeline."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 20}

    def __init__(
        self,
        task: type[Task],
        num_envs: int = 1,
        obs_mode: str = "state",
        control_mode: str | None = None,
        reward_mode: str = "dense",
        sim_backend: str = "physx_cpu",
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        reconfiguration_freq: int | None = 0,
        render_size: tuple[int, int] = (256, 256),
        sensor_configs: dict | None = None,
        render_camera: dict | None = None,
        render_lod: str | float = "auto",
        physics: PhysicsConfig | None = None,
        robot: str | None = None,
        physics_isolation: str = "shared",
        sim_device: str | torch.device | None = None,
        seed: Any = None,
        randomization: dict | None = None,
        **task_kwargs: Any,
    ):
        # task parameters (make("PickCube-v1", cube_half_size=0.03)): unknown names refused first
        task_params = task.check_parameters(task_kwargs)
        if not (isinstance(num_envs, (int, np.integer)) and not isinstance(num_envs, bool)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.obs_mode = checks.check_choice("obs_mode", obs_mode, OBS_MODES)
        self.reward_mode = checks.check_choice("reward_mode", reward_mode, REWARD_MODES)
        control_mode = task.default_control_mode if control_mode is None else control_mode
        self.control_mode = checks.check_choice("control_mode", control_mode, CONTROL_MODES)
        # robot: a registered name; the task decides which it supports (None: any)
        robot = task.default_robot if robot is None else robot
        spec = get_robot_spec(robot)
        if task.supported_robots is not None and robot not in task.supported_robots:
            raise ValueError(f"robot must be one that {task.__name__} supports, one of "
                             f"{list(task.supported_robots)}, got {robot!r}")
        # checks the control mode and the URDF before anything is built; loaded in _build
        self.robot = Robot(spec, self.control_mode, task.robot_base_position)
        checks.check_choice("sim_backend", sim_backend, SIM_BACKENDS)
        reconfiguration_freq = 0 if reconfiguration_freq is None else reconfiguration_freq  # ManiSkill3: None = never
        if render_mode is not None:
            checks.check_choice("render_mode", render_mode, RENDER_MODES)
        # isolation "separate": one PhysX system per env, env i bit-exact (robosim.sim.isolation)
        self.physics_isolation = check_isolation(physics_isolation, resolve_backend(sim_backend))
        if max_episode_steps is not None and (isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, (int, np.integer)) or max_episode_steps < 1):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
        if isinstance(reconfiguration_freq, bool) or not isinstance(reconfiguration_freq, (int, np.integer)) or reconfiguration_freq < 0:
            raise ValueError(f"reconfiguration_freq must be an int >= 0, got {reconfiguration_freq!r}")
        if physics is not None and not isinstance(physics, PhysicsConfig):
            raise TypeError(f"physics must be a robosim.sim.PhysicsConfig or None, got {type(physics).__name__}")
        self.physics = physics  # None: PhysicsConfig() (ManiSkill3's solver settings)

        self.num_envs = int(num_envs)
        self.sim_backend = sim_backend
        self.render_mode = render_mode
        self.render_size = render_size
        # cameras: sensor_configs overrides the task's cameras ({"width": 64} or
        # {"base_camera": {...}}); render_camera sets the rgb_array view panda-gym style
        # (width, height, target_position, distance, yaw, pitch, roll); render_lod is
        # "auto" | "full" | "low" | kept triangle fraction (robosim/sensors/lod.py)
        if render_camera is None or isinstance(render_camera, dict):   # the task's view, then the user's keys
            render_camera = {**task.human_camera, **(render_camera or {})}
        rig_spec = RigSpec.from_env_kwargs(
            task.sensor_cameras, obs_mode in CAMERA_OBS_MODES or render_mode == "sensors",
            render_mode == "rgb_array", sensor_configs, render_camera, render_size, render_lod)
        self.reconfiguration_freq = int(reconfiguration_freq)
        self.task = task(self, **task_params)
        self.task_params = dict(task_params)
        self.max_episode_steps = int(max_episode_steps or task.max_episode_steps)
        self.substeps = task.sim_freq // task.control_freq
        self.device = backend_device(resolve_backend(sim_backend), sim_device)   # where every tensor lives
        self._recipe = SceneRecipe(sim_backend, self.num_envs, task.sim_freq, task.control_freq, physics,
                                   self.physics_isolation, self.device, rig_spec, tuple(task.sensor_cameras))
        self._rng = EnvRandomStreams(self.num_envs, self.device)
        self.elapsed_steps = torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        # declared randomization events (robosim.randomization): task defaults + make's
        self.randomization = EventManager(task.default_events, randomization, self._rng, 1.0 / task.control_freq,
                                          self.elapsed_steps)
        if seed is not None:   # seeded from the first build on: assets of env i depend on (seed_i, build r)
            self._rng.seed(checks.to_seeds("seed", seed, torch.arange(self.num_envs)), np.arange(self.num_envs))
        self._saved_states: dict[int, torch.Tensor] = {}
        self._next_state_id = 0
        self._full_resets = 0
        self._task_check = TaskOutputCheck(type(self.task).__name__, self.num_envs, self.device)
        self.parts: EnvParts | None = None
        self._build()

        low, high = self.robot.action_low.numpy(), self.robot.action_high.numpy()
        self.single_action_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.single_observation_space = self._obs.single_space()
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.randomization.bind_spaces(self.single_observation_space, self.single_action_space)
        self._action_low = torch.as_tensor(low, device=self.device)
        self._action_high = torch.as_tensor(high, device=self.device)
        self._action_shape = (self.num_envs, *self.single_action_space.shape)

    # -- construction ------------------------------------------------------------------
    def _build(self) -> None:
        """(Re)build the whole scene (ground, robot, task actors, cameras) into new parts,
        then the stages that read it and the step's subscriber lists."""
        if self.parts is not None:
            self.parts.sim.close()
            self.parts = None
        self._build_seeds = self._rng.base_seeds.clone()
        build_rng = self._rng.next_build()
        parts = build_parts(self._recipe, self.robot, self.randomization.object_modifiers(),
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
            if not partial and self._randomizes_build and not torch.equal(self._build_seeds, self._rng.base_seeds):
                self._rng.builds = 0     # assets of a seeded full reset: build 0 of the new seeds
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
        info["reconfigure"] = reconfigure
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
        advance time without touching the drive targets."""
        self._check_open()
        if action is not None:
            action = checks.to_float_tensor("action", action, self._action_shape, self.device)
            if self.randomization.perturbs_actions:   # action noise: before the clip
                action = self.randomization.perturb_action(action)
            action = torch.clamp(action, self._action_low, self._action_high)
            self.robot.apply_action(action)
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
        files store). ValueError when the task class is not registered."""
        import robosim
        from robosim.envs.registry import get_task, list_tasks

        ids = [task_id for task_id in list_tasks() if get_task(task_id) is type(self.task)]
        if not ids:
            raise ValueError(f"env must run a registered task, got {type(self.task).__name__}")
        kwargs = dict(obs_mode="none", control_mode=self.control_mode, reward_mode=self.reward_mode,
                      sim_backend=self.sim_backend, max_episode_steps=self.max_episode_steps,
                      reconfiguration_freq=self.reconfiguration_freq, physics_isolation=self.physics_isolation,
                      # what rebuilds the same assets and events: randomization, build seeds, robot, task parameters
                      randomization=self.randomization.spec, seed=self.build_seeds, robot=self.robot.spec.name,
                      **self.task_params)
        return dict(robosim_version=robosim.__version__, task_id=ids[0], env_kwargs=kwargs, num_envs=self.num_envs,
                    state_dim=self.state_dim, action_dim=int(self.single_action_space.shape[0]),
                    sim_backend=self.sim_backend, control_mode=self.control_mode,
                    control_freq=self.task.control_freq)

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
        interval-event timers, held wrenches and the episode counters. It is also written back: PhysX
        keeps solver state that get_state cannot read and every write resets, so only
        then do the run after save_state and the run after restore_state start alike
        (bit for bit with physics_isolation="separate"; docs/reliability.md)."""
        state_id = self._next_state_id
        state = self.get_state().clone()
        self.set_state(state)
        self._saved_states[state_id] = (state, self.elapsed_steps.clone(), self.randomization.get_timers(),
                                        self._rng.base_seeds.clone(), self._rng.episode.clone(),
                                        self.sim.wrench_snapshot())
        self._next_state_id += 1
        return state_id

    def restore_state(self, state_id: int) -> None:
        """Put every env back to snapshot `state_id` (physics, task, elapsed_steps, timers)."""
        if isinstance(state_id, bool) or state_id not in self._saved_states:
            raise ValueError(f"state_id must be an id returned by save_state, got {state_id!r}")
        state, elapsed, timers, seeds, episodes, wrenches = self._saved_states[state_id]
        self.set_state(state)
        self.sim.restore_wrenches(wrenches)
        self.elapsed_steps.copy_(elapsed)
        self.randomization.set_timers(timers)
        self._rng.base_seeds.copy_(seeds)
        self._rng.episode.copy_(episodes)

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
        return [int(v) for v in self._build_seeds.tolist()]

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
