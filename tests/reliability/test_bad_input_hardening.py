"""Inputs that used to be accepted silently, cast, or answered with a traceback (issue
#10, item 6): each now gets a ValueError/TypeError naming the argument, the expected and
the given value, and leaves the env unchanged and usable; the CLI prints one line."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
import torch

import robosim
from robosim.sim import PhysicsConfig
from robosim.vector.normalize import NormalizeVecEnv

CLI = [sys.executable, "-m", "robosim.cli"]


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=2)
    env.reset(seed=0)
    yield env
    env.close()


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(options={"reconfigure": "false"}), TypeError, r"options\['reconfigure'\] must be a bool, got 'false'"),
    (dict(options={"reconfigure": 1}), TypeError, r"options\['reconfigure'\] must be a bool, got 1"),
    (dict(options={"env_idx": [0.5]}), ValueError, r"options\['env_idx'\] must hold ints .*got 0.5"),
    (dict(options={"env_idx": [True, False]}), ValueError, r"options\['env_idx'\] must hold ints .*got True"),
    (dict(seed=[1.9, 7.2]), TypeError, r"seed list must hold ints, got 1.9"),
    (dict(seed=["3", "4"]), TypeError, r"seed list must hold ints, got '3'"),
    (dict(seed=2**64), ValueError, r"seed must be <= 2\*\*63 - 1 .*got 18446744073709551616"),
    (dict(seed=-1), ValueError, r"seed must be >= 0, got -1"),
    (dict(seed=np.zeros((2, 1), np.int64)), ValueError, r"seed array must be 1-D, got shape \(2, 1\)"),
])
def test_bad_reset_arguments_are_refused_and_change_nothing(env, kwargs, error, message):
    before = env.get_state()
    builds = env._rng.builds
    with pytest.raises(error, match=message):
        env.reset(**kwargs)
    assert torch.equal(env.get_state(), before) and env._rng.builds == builds
    env.step(torch.zeros(2, 7))


@pytest.mark.parametrize("kwargs, message", [
    (dict(cpu_workers=1000), r"cpu_workers must be an int >= 0 or None, got 1000 \(at most 64"),
    (dict(static_friction=-0.1), r"static_friction must be a finite number in \[0.0, 100.0\], got -0.1"),
    (dict(restitution=math.nan), r"restitution must be a finite number in \[0.0, 1.0\], got nan"),
    (dict(contact_offset=math.inf), r"contact_offset must be a finite number"),
    (dict(solver_velocity_iterations=True), r"solver_velocity_iterations must be an int in \[0, 255\], got True"),
])
def test_physics_config_refuses_absurd_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PhysicsConfig(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(render_camera={"fovy": 0.0}), r"render_camera fovy must be in \(0, pi\) rad, got 0.0"),
    (dict(max_episode_steps=True), r"max_episode_steps must be a positive int or None, got True"),
    (dict(reconfiguration_freq=False), r"reconfiguration_freq must be an int >= 0, got False"),
])
def test_env_kwargs_that_were_accepted_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        robosim.make("PickCube-v1", num_envs=1, **kwargs)


@pytest.fixture(scope="module")
def normalized(tmp_path_factory):
    venv = NormalizeVecEnv(robosim.make_vec("PickCube-v1", num_envs=2))
    venv.reset(seed=0)
    venv.step(torch.zeros(2, 7))
    path = tmp_path_factory.mktemp("norm") / "stats.pt"
    venv.save(path)
    yield venv, path
    venv.close()


def _corrupt(state: dict, how: str) -> dict:
    key = next(iter(state["obs_rms"]))
    rms = state["obs_rms"][key]
    if how == "shape":
        rms["mean"] = torch.zeros(rms["mean"].shape[0] + 1, dtype=torch.float64)
    elif how == "negative var":
        rms["var"] = -torch.ones_like(rms["var"])
    elif how == "nan":
        rms["mean"] = torch.full_like(rms["mean"], math.nan)
    elif how == "unknown key":
        state["extra"] = 1
    elif how == "count":
        state["ret_rms"]["count"] = -3
    return state


@pytest.mark.parametrize("how, message", [
    ("shape", "must have shape"), ("negative var", r"\['var'\] must be >= 0"), ("nan", "must be finite"),
    ("unknown key", "state must be a dict from NormalizeVecEnv.state_dict"),
    ("count", r"\['count'\] must be an int >= 0"),
])
def test_normalize_load_refuses_bad_statistics_and_keeps_its_own(normalized, tmp_path, how, message):
    venv, path = normalized
    before = venv.state_dict()
    bad = tmp_path / "bad.pt"
    torch.save(_corrupt(torch.load(path, weights_only=True), how), bad)
    with pytest.raises(ValueError, match=message):
        venv.load(bad)
    after = venv.state_dict()
    assert all(torch.equal(after["obs_rms"][k]["mean"], before["obs_rms"][k]["mean"]) for k in before["obs_rms"])
    assert torch.equal(after["ret_rms"]["var"], before["ret_rms"]["var"])


@pytest.mark.parametrize("content", [b"", os.urandom(4096), b"PK\x03\x04 not a torch file"])
def test_normalize_load_of_a_corrupt_file_is_a_value_error(normalized, tmp_path, content):
    venv, _ = normalized
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(content)
    with pytest.raises(ValueError, match="must be a file written by NormalizeVecEnv.save"):
        venv.load(bad)


def _one_error_line(result, command: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"robosim {command}: error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]


@pytest.mark.slow   # one CLI subprocess per damaged file: ~44 s
def test_replay_of_random_bytes_or_missing_fields_fails_with_one_line(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_bytes(os.urandom(4096))
    _one_error_line(subprocess.run(CLI + ["replay", str(junk)], capture_output=True, text=True), "replay")
    for drop in ("actions", "states"):
        path = tmp_path / f"no_{drop}.h5"
        with h5py.File(path, "w") as f:
            f.attrs.update(format="robosim-trajectory", format_version=1, task_id="PickCube-v1", env_kwargs="{}",
                           num_envs=1, state_dim=3, action_dim=2)
            g = f.create_group("episode_00000")
            g.attrs.update(env_index=0, seed=0, complete=True, length=1)
            for name, shape in (("states", (2, 3)), ("actions", (1, 2)), ("rewards", (1,))):
                if name != drop:
                    g.create_dataset(name, data=np.zeros(shape, np.float32))
            for name in ("success", "terminated", "truncated"):
                g.create_dataset(name, data=np.zeros(1, bool))
        result = subprocess.run(CLI + ["replay", str(path)], capture_output=True, text=True)
        _one_error_line(result, "replay")
        assert f"missing ['{drop}']" in result.stderr


@pytest.mark.slow   # CLI subprocesses: ~33 s
def test_cli_refuses_an_empty_video_path_a_huge_seed_and_a_json_path_at_the_filesystem_root(tmp_path):
    result = subprocess.run(CLI + ["eval", "Reach-v1", "--episodes", "1", "--video", ""], capture_output=True,
                            text=True, cwd=tmp_path)
    _one_error_line(result, "eval")
    assert "--video must be a file path" in result.stderr and os.listdir(tmp_path) == []
    result = subprocess.run(CLI + ["eval", "Reach-v1", "--episodes", "1", "--seed", str(2**64)],
                            capture_output=True, text=True, cwd=tmp_path)
    _one_error_line(result, "eval")
    assert "seed must be <= 2**63 - 1" in result.stderr
    missing = f"/robosim-nonexistent-{os.getpid()}/x.json"
    result = subprocess.run(CLI + ["bench", "--dry-run", "--json", missing], capture_output=True, text=True)
    assert result.returncode != 0 and "--json must not need a new directory at the filesystem root" in result.stderr
    assert not os.path.exists(os.path.dirname(missing))
