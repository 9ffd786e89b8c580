"""EnvParts: one build's products, handed to the stages; a reconfigure makes new parts;
build-time object modifiers are create_sim_scene's explicit argument."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import robosim
from robosim.sim import Box, RigidObject, create_sim_scene


def test_the_stages_share_one_build_and_a_rebuild_replaces_it():
    env = robosim.make("PickCube-v1", num_envs=2, sim_backend="physx_cpu")
    try:
        parts = env.parts
        assert env.sim is parts.sim and env.cameras is parts.cameras and parts.robot is env.robot
        assert parts.num_envs == 2 and parts.device == env.device
        assert parts.control_dt == 1 / 20 and parts.substeps == 5          # PickCube: 100 Hz physics, 20 Hz control
        assert parts.state_layout.state_dim == parts.sim.state_dim
        assert env._faults.sim is parts.sim and env._faults.layout is parts.state_layout
        assert env._obs.parts is parts
        with pytest.raises(dataclasses.FrozenInstanceError):
            parts.sim = None
        env.reset(seed=1, options={"reconfigure": True})
        assert env.parts is not parts and env.sim is env.parts.sim and env._obs.parts is env.parts
        assert env._faults.sim is env.parts.sim
    finally:
        env.close()
    assert env.parts is None and env.sim is None


def test_object_modifiers_rewrite_what_add_object_builds():
    lift = lambda i, obj: dataclasses.replace(obj, pose=(0.0, 0.0, 0.1 * (i + 1)))   # noqa: E731
    sim = create_sim_scene("physx_cpu", 2, 100, render=False, object_modifiers={"cube": [lift]})
    try:
        cube = sim.add_object("cube", RigidObject([Box(0.02)], pose=(0.0, 0.0, 0.02)))
        other = sim.add_object("other", RigidObject([Box(0.02)], pose=(0.2, 0.0, 0.02)))
        sim.finalize()
        assert torch.allclose(cube.pose()[:, 2], torch.tensor([0.1, 0.2]))
        assert torch.allclose(other.pose()[:, 2], torch.tensor([0.02, 0.02]))   # other names untouched
    finally:
        sim.close()


@pytest.mark.parametrize("modifiers", [{"cube": [3]}, {"cube": lambda i, o: o}, {1: []}, ["cube"]])
def test_bad_object_modifiers_are_refused(modifiers):
    with pytest.raises(TypeError, match="object_modifiers must map object names to lists of functions"):
        create_sim_scene("physx_cpu", 1, 100, render=False, object_modifiers=modifiers)
