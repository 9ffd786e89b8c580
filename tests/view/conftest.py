"""Fixtures of the viewer tests: a free local port, and a small rendered PickCube batch."""
from __future__ import annotations

import socket

import pytest

import robosim


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=2, render_mode="rgb_array", render_lod="low")
    env.reset(seed=0)
    yield env
    env.close()


@pytest.fixture
def viewer(env, port):
    """A viewer attached to the module's env, reset at seed 0; closed after the test."""
    from robosim.view import attach
    env.reset(seed=0)
    v = attach(env, port=port)
    yield v
    v.close()


@pytest.fixture
def teleop_env(request):
    """One PickCube env for teleoperation in pd_ee_delta_pose, separate isolation (exact
    replay); episodes of the test module's EPISODE steps."""
    env = robosim.make("PickCube-v1", num_envs=1, render_mode="rgb_array", render_lod="low",
                       control_mode="pd_ee_delta_pose", physics_isolation="separate",
                       max_episode_steps=request.module.EPISODE)
    yield env
    env.close()
