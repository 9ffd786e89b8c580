"""EnvSpec is the one home of make()'s arguments: every field validated, JSON round trip,
stored in trajectory headers, and a run recorded with non-default values of every
field replays exactly (physics_isolation="separate")."""
from __future__ import annotations

import dataclasses
import inspect
import json

import h5py
import pytest
import torch

import robosim
from robosim.envs import EnvSpec, make_env
from robosim.envs.base_env import BaseEnv
from robosim.record import RecordEpisode, replay
from robosim.record.trajectory import TrajectoryFile
from robosim.sim import PhysicsConfig

CUSTOM_PHYSICS = PhysicsConfig(solver_position_iterations=4, static_friction=0.05, dynamic_friction=0.05,
                               cpu_workers=0)
# a value other than the default for every field (test_every_field_has_a_non_default_value checks it)
NON_DEFAULT = dict(
    task_id="PickCube-v1", num_envs=2, obs_mode="state_dict", control_mode="pd_joint_delta_pos",
    reward_mode="normalized_dense", sim_backend="auto", render_mode="rgb_array", max_episode_steps=9,
    reconfiguration_freq=2, render_size=(32, 24), sensor_configs={"width": 32, "height": 32},
    render_camera={"yaw": 30.0}, render_lod="low", physics=CUSTOM_PHYSICS, robot="xarm7",
    physics_isolation="separate", sim_device="cpu", device="cpu", seed=7,
    randomization={"gains": {"mode": "reset", "target": "robot", "property": "stiffness",
                             "dist": {"uniform": [0.8, 1.2]}}},
    task_params={"cube_half_size": 0.025},
)


def test_every_field_has_a_non_default_value():
    fields = {f.name: f for f in dataclasses.fields(EnvSpec)}
    assert set(NON_DEFAULT) == set(fields), "a new EnvSpec field needs a value in NON_DEFAULT"
    default = EnvSpec("PickCube-v1")
    for name in fields:
        if name != "task_id":
            assert NON_DEFAULT[name] != getattr(default, name), name


def test_json_round_trip_keeps_every_field():
    spec = EnvSpec(**NON_DEFAULT)
    text = spec.to_json()
    assert json.loads(text)["physics"]["solver_position_iterations"] == 4
    back = EnvSpec.from_json(text)
    assert back == spec
    assert {f.name: getattr(back, f.name) for f in dataclasses.fields(EnvSpec)} == NON_DEFAULT


def test_make_takes_exactly_the_spec():
    """make() has no keyword list of its own: BaseEnv is built from a spec alone, and a
    keyword that is neither a field nor a task parameter is refused by name."""
    assert list(inspect.signature(BaseEnv.__init__).parameters) == ["self", "spec"]
    with pytest.raises(ValueError, match="no_such_option"):
        robosim.make("PickCube-v1", no_such_option=1)


@pytest.mark.parametrize("field, value, match", [
    ("num_envs", 0, "num_envs must be a positive int"),
    ("obs_mode", "pixels", "obs_mode must be one of"),
    ("control_mode", "pd_magic", "control_mode must be one of"),
    ("reward_mode", "shaped", "reward_mode must be one of"),
    ("sim_backend", "mujoco", "sim_backend must be one of"),
    ("render_mode", "human", "render_mode must be one of"),
    ("max_episode_steps", 0, "max_episode_steps must be a positive int"),
    ("reconfiguration_freq", -1, "reconfiguration_freq must be an int >= 0"),
    ("render_size", (0, 10), "render_size must be"),
    ("sensor_configs", {"no_such_camera": {"width": 8}}, "sensor_configs"),
    ("render_camera", [1, 2], "render_camera must be a dict"),
    ("render_lod", "medium", "render_lod"),
    ("physics", {"solver_position_iterations": 3}, "physics must be a robosim.sim.PhysicsConfig or None"),
    ("robot", "r2d2", "robot"),
    ("physics_isolation", "apart", "physics_isolation must be one of"),
    ("sim_device", 3.5, "sim_device must be"),
    ("device", "gpu9", "device must be a torch device name"),
    ("seed", -1, "seed must be >= 0"),
    ("seed", [1, 2, 3], r"seed list must have one seed per env"),
    ("randomization", {"x": object()}, "randomization must be JSON-able"),
    ("task_params", {"cube_half_size": "big"}, "cube_half_size"),
])
def test_every_field_is_validated_by_name(field, value, match):
    with pytest.raises((ValueError, TypeError), match=match):
        EnvSpec("PickCube-v1", **{field: value})


def test_old_header_with_env_kwargs_still_loads(tmp_path):
    """Trajectory files from before EnvSpec stored make()'s keywords as env_kwargs."""
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:
        f.attrs.update(format="robosim-trajectory", format_version=1, task_id="PushCube-v1", num_envs=2,
                       state_dim=5, action_dim=7,
                       env_kwargs=json.dumps({"control_mode": "pd_joint_delta_pos", "seed": [3, 4],
                                              "physics_isolation": "separate", "obs_mode": "none"}))
    spec = TrajectoryFile(str(path)).spec
    assert (spec.task_id, spec.num_envs, spec.seed, spec.physics) == ("PushCube-v1", 2, [3, 4], None)
    assert spec.control_mode == "pd_joint_delta_pos"


def test_a_header_with_an_unknown_field_names_it(tmp_path):
    path = tmp_path / "future.h5"
    with h5py.File(path, "w") as f:
        f.attrs.update(format="robosim-trajectory", format_version=1, task_id="PushCube-v1", num_envs=1,
                       state_dim=5, action_dim=7, env_spec=json.dumps({"task_id": "PushCube-v1", "warp": 9}))
    with pytest.raises(ValueError, match="'warp'"):
        _ = TrajectoryFile(str(path)).spec
    spec = EnvSpec("PushCube-v1").to_dict()
    with pytest.raises(ValueError, match=r"physics has fields .*'solver_iterations'"):
        EnvSpec.from_dict({**spec, "physics": {"solver_iterations": 3}})


@pytest.fixture(scope="module")
def recorded_with_every_field(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("spec") / "run.h5")
    kwargs = {k: v for k, v in NON_DEFAULT.items() if k != "task_params"}
    env = robosim.make(**kwargs, **NON_DEFAULT["task_params"])   # make's keywords: fields + task parameters
    g = torch.Generator().manual_seed(0)
    low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
    with RecordEpisode(env, trajectory=path) as recorder:
        for episode in range(3):   # reconfiguration_freq=2: the third reset rebuilds
            recorder.reset(seed=11 + episode)
            for _ in range(env.max_episode_steps):
                recorder.step(low + torch.rand(env.num_envs, len(low), generator=g) * (high - low))
    return path, env.env_spec


def test_header_stores_the_whole_spec(recorded_with_every_field):
    path, spec = recorded_with_every_field
    stored = TrajectoryFile(path).spec
    assert stored.physics == CUSTOM_PHYSICS and stored.robot == "xarm7" and stored.task_params == {
        "cube_half_size": 0.025}
    assert stored.replace(seed=spec.seed, device=spec.device) == spec


def test_a_run_with_non_default_values_of_every_field_replays_exactly(recorded_with_every_field):
    path, _ = recorded_with_every_field
    report = replay(path, mode="actions", progress=False)
    assert report.episodes == 6 and report.exact, report.summary()


def test_make_env_rebuilds_with_changes():
    spec = EnvSpec("PushCube-v1", num_envs=2, physics=CUSTOM_PHYSICS)
    env = make_env(spec, num_envs=1, max_episode_steps=7)
    try:
        assert (env.num_envs, env.max_episode_steps, env.env_spec.physics) == (1, 7, CUSTOM_PHYSICS)
    finally:
        env.close()
