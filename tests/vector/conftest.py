"""Fixtures for the vector tests: the chasing example loaded as a module, a small
rendering PushCube env, and Stable-Baselines3's log folder inside pytest's temporary
directory (SB3 otherwise makes an empty /tmp/SB3-<time> folder on every learn())."""
from __future__ import annotations

import importlib.util
import os

import pytest

import robosim

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "chasing_vec_env.py")


@pytest.fixture(autouse=True)
def sb3_log_folder(tmp_path, monkeypatch):
    """SB3_LOGDIR, read by stable_baselines3.common.logger.configure, set to the test's tmp_path."""
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3"))


@pytest.fixture(scope="session")
def chasing():
    """examples/chasing_vec_env.py as a module (examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("chasing_vec_env", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rendering_push_cube(num_envs: int, horizon: int):
    """PushCube with 32x32 rgb_array frames; with zero actions it never succeeds, so every
    episode ends by truncation at `horizon`."""
    return robosim.make("PushCube-v1", num_envs=num_envs, max_episode_steps=horizon, render_mode="rgb_array",
                        render_size=(32, 32))
