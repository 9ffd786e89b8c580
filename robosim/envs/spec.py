"""EnvSpec: everything robosim.make() takes, in one frozen, JSON-able value.

`robosim.make(task_id, **kwargs)` builds an EnvSpec and the env from it; the env keeps
the resolved spec (`env.env_spec`: the task's defaults filled in). Trajectory files,
demos files and LeRobot exports store `spec.to_dict()`, and replay, demo conversion,
the CLI and the Ray workers rebuild an env from a stored spec through `make_env`, so
the list of make()'s arguments has one home: the fields below.

Every field is validated at construction, with a ValueError/TypeError naming the
field, what was expected and what was given, before anything is built.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import torch

from robosim.envs.checks import check_choice, is_int, to_seeds
from robosim.envs.device_transfer import check_output_device
from robosim.envs.observations import CAMERA_OBS_MODES, OBS_MODES
from robosim.envs.robots import check_control_mode_field, check_robot_field, resolved_robot
from robosim.envs.task import Task, check_robot_for_task
from robosim.sensors.rig import RigSpec
from robosim.sim import SIM_BACKENDS, PhysicsConfig, resolve_backend
from robosim.sim.isolation import check_isolation

REWARD_MODES = ("dense", "normalized_dense", "sparse", "none")
RENDER_MODES = ("rgb_array", "sensors")
SPEC_FORMAT_VERSION = 1



def _check_json(name: str, value: Any) -> Any:
    """`value` itself when it survives a JSON round trip unchanged (dicts of str keys,
    lists, numbers, str, bool, None), else ValueError naming the field."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be JSON-able (dicts with str keys, lists, finite numbers, str, bool, "
                         f"None), got {value!r} ({err})") from None
    return json.loads(text)


def _check_seed(value: Any, num_envs: int) -> int | list[int] | None:
    """make()'s build seed as stored: an int stays an int (env i gets seed + i), a list
    becomes a list of ints, one per env (robosim.envs.checks.to_seeds checks both)."""
    seeds = to_seeds("seed", value, torch.arange(num_envs))
    return None if seeds is None else (int(value) if is_int(value) else seeds)


def _check_device(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, torch.device)):
        raise TypeError(f"{name} must be a str, a torch.device or None, got {type(value).__name__}")
    try:
        return str(torch.device(value))
    except RuntimeError as err:
        raise ValueError(f"{name} must name a torch device such as 'cpu' or 'cuda:0', got {value!r} ({err})") from None


def _task_class(task: Any) -> type[Task]:
    from robosim.envs.registry import get_task

    return task if isinstance(task, type) and issubclass(task, Task) else get_task(task)


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What robosim.make builds. Field names are make()'s keyword names; task_params
    holds the task's own parameters (Task.parameters), passed to make as keywords.

    task_id: a registered id, 'package.module:TaskClass', or a Task subclass (kept as
    given; `to_dict` stores its registered id)."""

    task_id: Any
    num_envs: int = 1
    obs_mode: str = "state"
    control_mode: str | dict | None = None   # None: the task's default_control_mode; dict: {slot: mode}
    reward_mode: str = "dense"
    sim_backend: str = "physx_cpu"
    render_mode: str | None = None
    max_episode_steps: int | None = None     # None: the task's max_episode_steps
    reconfiguration_freq: int = 0            # 0: rebuild only on options["reconfigure"] or a seeded build
    render_size: tuple[int, int] = (256, 256)
    sensor_configs: dict | None = None       # overrides of the task's cameras (robosim.sensors.camera)
    render_camera: dict | None = None        # render_mode="rgb_array" view, panda-gym style keys
    render_lod: str | float = "auto"
    physics: PhysicsConfig | None = None     # None: PhysicsConfig() (ManiSkill3's solver settings)
    robot: str | dict | None = None          # None: the task's default_robot(s); dict: {slot: name}
    physics_isolation: str = "shared"
    sim_device: str | None = None            # physx_gpu_emulated only: where its state lives
    device: str | None = None                # where step/reset hand tensors over; None: env's own
    seed: int | list[int] | None = None      # build seed (env i: seed + i, or seed[i])
    randomization: dict | None = None        # declared events (robosim.randomization)
    task_params: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        task = _task_class(self.task_id)
        put = object.__setattr__   # frozen: normalize once, here
        if not is_int(self.num_envs) or self.num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {self.num_envs!r}")
        put(self, "num_envs", int(self.num_envs))
        check_choice("obs_mode", self.obs_mode, OBS_MODES)
        check_choice("reward_mode", self.reward_mode, REWARD_MODES)
        check_choice("sim_backend", self.sim_backend, SIM_BACKENDS)
        if self.render_mode is not None:
            check_choice("render_mode", self.render_mode, RENDER_MODES)
        if self.max_episode_steps is not None:
            if not is_int(self.max_episode_steps) or self.max_episode_steps < 1:
                raise ValueError(f"max_episode_steps must be a positive int or None, got {self.max_episode_steps!r}")
            put(self, "max_episode_steps", int(self.max_episode_steps))
        freq = 0 if self.reconfiguration_freq is None else self.reconfiguration_freq   # ManiSkill3: None = never
        if not is_int(freq) or freq < 0:
            raise ValueError(f"reconfiguration_freq must be an int >= 0, got {self.reconfiguration_freq!r}")
        put(self, "reconfiguration_freq", int(freq))
        size = self.render_size
        if (not isinstance(size, (tuple, list)) or len(size) != 2 or not all(is_int(v) and v > 0 for v in size)):
            raise ValueError(f"render_size must be (width, height) positive ints, got {size!r}")
        put(self, "render_size", (int(size[0]), int(size[1])))
        for name in ("sensor_configs", "render_camera", "randomization"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise TypeError(f"{name} must be a dict or None, got {type(value).__name__}")
            put(self, name, None if value is None else _check_json(name, value))
        self.rig_spec()   # sensor_configs, render_camera, render_size, render_lod
        if self.physics is not None and not isinstance(self.physics, PhysicsConfig):
            raise TypeError(f"physics must be a robosim.sim.PhysicsConfig or None, got {type(self.physics).__name__}")
        # a name, or {slot: name} for a multi-robot task (robosim.envs.robots); ValueError
        # listing the known robots / slots, then the task's check of each robot
        put(self, "robot", check_robot_field(task, self.robot, check_robot_for_task))
        # a mode, or {slot: mode} naming every slot; each robot must support its own
        put(self, "control_mode", check_control_mode_field(task, self.control_mode, self.robot))
        check_isolation(self.physics_isolation, resolve_backend(self.sim_backend))
        put(self, "sim_device", _check_device("sim_device", self.sim_device))
        if self.device is not None:   # refused before the build: a device torch cannot use here
            put(self, "device", str(check_output_device(self.device)))
        put(self, "seed", _check_seed(self.seed, self.num_envs))
        if not isinstance(self.task_params, dict):
            raise TypeError(f"task_params must be a dict, got {type(self.task_params).__name__}")
        put(self, "task_params", dict(task.check_parameters(dict(self.task_params))))

    # -- construction ---------------------------------------------------------------
    @classmethod
    def from_kwargs(cls, task_id: Any, **kwargs: Any) -> EnvSpec:
        """make()'s arguments -> EnvSpec: keywords that are not fields are the task's
        parameters (ValueError naming an unknown one)."""
        fields = {f.name for f in dataclasses.fields(cls)} - {"task_id", "task_params"}
        given = {k: v for k, v in kwargs.items() if k in fields}
        params = {k: v for k, v in kwargs.items() if k not in fields}
        if "task_params" in kwargs:
            raise ValueError("task parameters are passed to make as keywords (make(task, cube_half_size=0.03)), "
                             "got a keyword named 'task_params'")
        return cls(task_id, task_params=params, **given)

    def replace(self, **changes: Any) -> EnvSpec:
        """A copy with `changes` (make()'s keyword names; task parameters go in task_params)."""
        return dataclasses.replace(self, **changes)

    @property
    def task_class(self) -> type[Task]:
        return _task_class(self.task_id)

    def resolved(self) -> EnvSpec:
        """This spec with the task's defaults written in (control_mode, robot,
        max_episode_steps) and sim_backend "auto" resolved: the same env, independent of
        later changes to the defaults or of the machine a stored spec is rebuilt on."""
        task = self.task_class
        return self.replace(sim_backend=resolve_backend(self.sim_backend),
                            control_mode=self.control_mode or task.default_control_mode,
                            robot=resolved_robot(task, self.robot),
                            max_episode_steps=self.max_episode_steps or task.max_episode_steps)

    def rig_spec(self) -> RigSpec:
        """The cameras this spec asks for (robosim.sensors.rig; validates the camera fields)."""
        task = self.task_class
        render_camera = {**task.human_camera, **(self.render_camera or {})}   # the task's view, then the user's keys
        return RigSpec.from_env_kwargs(
            task.sensor_cameras, self.obs_mode in CAMERA_OBS_MODES or self.render_mode == "sensors",
            self.render_mode == "rgb_array", self.sensor_configs, render_camera, self.render_size, self.render_lod)

    def make_kwargs(self) -> dict[str, Any]:
        """robosim.make's keyword arguments (without task_id): fields, then task parameters."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("task_id", "task_params")}
        return {**out, **self.task_params}

    # -- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of every field (physics as a dict); `from_dict` inverts it.
        ValueError when task_id is a Task class that is not registered under an id."""
        task_id = self.task_id if isinstance(self.task_id, str) else registered_id(self.task_class)
        out: dict[str, Any] = {"format_version": SPEC_FORMAT_VERSION, "task_id": task_id}
        for f in dataclasses.fields(self):
            if f.name == "task_id":
                continue
            value = getattr(self, f.name)
            if isinstance(value, PhysicsConfig):
                value = dataclasses.asdict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any], arg: str = "spec") -> EnvSpec:
        """Inverse of to_dict. ValueError naming `arg` and the field for an unknown or
        missing field."""
        if not isinstance(data, dict):
            raise TypeError(f"{arg} must be a dict (EnvSpec.to_dict()), got {type(data).__name__}")
        data = dict(data)
        version = data.pop("format_version", SPEC_FORMAT_VERSION)
        if version != SPEC_FORMAT_VERSION:
            raise ValueError(f"{arg} format_version must be {SPEC_FORMAT_VERSION}, got {version!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"{arg} has fields this robosim does not know: {unknown} (known: {sorted(names)})")
        if "task_id" not in data:
            raise ValueError(f"{arg} must have the field 'task_id', got fields {sorted(data)}")
        if isinstance(data.get("physics"), dict):
            data["physics"] = physics_from_dict(data["physics"])
        return cls(**data)

    @classmethod
    def from_json(cls, text: str, arg: str = "spec") -> EnvSpec:
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"{arg} must be a JSON object (EnvSpec.to_json()), got {text!r:.80} ({err})") from None
        return cls.from_dict(data, arg)


def physics_from_dict(data: dict[str, Any]) -> PhysicsConfig:
    """PhysicsConfig from its asdict() form; ValueError naming an unknown field."""
    names = {f.name for f in dataclasses.fields(PhysicsConfig)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"physics has fields PhysicsConfig does not know: {unknown} (known: {sorted(names)})")
    return PhysicsConfig(**data)


def registered_id(task: type[Task]) -> str:
    """The id `task` is registered under (ValueError when there is none)."""
    from robosim.envs.registry import get_task, list_tasks

    for task_id in list_tasks():
        if get_task(task_id) is task:
            return task_id
    raise ValueError(f"env must run a registered task to be saved or rebuilt, got {task.__name__} "
                     f"(register it with @robosim.register_task)")


def make_env(spec: EnvSpec, **changes: Any):
    """The one way to rebuild an env from a stored spec: robosim.make(spec) with
    `changes` of make()'s keyword arguments (e.g. obs_mode, render_mode, num_envs)."""
    from robosim.envs.registry import make

    fields = {f.name for f in dataclasses.fields(EnvSpec)}
    params = {k: changes.pop(k) for k in list(changes) if k not in fields}
    if params:
        changes["task_params"] = {**spec.task_params, **params}
    return make(spec.replace(**changes) if changes else spec)
