"""SimScene: env layout, isolation between envs sharing one PhysX system, state."""
from __future__ import annotations

import numpy as np
import pytest
import sapien
import torch

from robosim.sim import SimScene
from robosim.sim.layout import MAX_ENVS_PER_SYSTEM, env_origins


def test_origins_share_one_float32_binade_and_are_far_apart():
    origins = env_origins(MAX_ENVS_PER_SYSTEM)
    xy = origins[:, :2]
    assert ((xy >= 64) & (xy < 128)).all()
    assert torch.equal(origins, origins.float().double())  # exactly representable
    distances = torch.cdist(xy, xy) + torch.eye(len(xy)) * 100
    assert distances.min() >= 3.0
    with pytest.raises(ValueError, match=r"num_envs must be in \[1, 256\]"):
        env_origins(MAX_ENVS_PER_SYSTEM + 1)


def _box(sim, name, z):
    def build(scene, i):
        builder = scene.create_actor_builder()
        builder.add_box_collision(half_size=[0.05] * 3)
        builder.add_box_visual(half_size=[0.05] * 3)
        builder.initial_pose = sapien.Pose(sim.origins[i].numpy() + [0, 0, z])
        return builder.build(name=name)

    return sim.build_actors(name, build)


def test_envs_fall_independently_and_report_env_frame_poses():
    sim = SimScene(3, 100)
    try:
        sim.add_ground()
        box = _box(sim, "box", 0.5)
        box.set_pose(torch.tensor([[0.0, 0, 0.5, 1, 0, 0, 0], [0.3, 0.2, 1.0, 1, 0, 0, 0]]), torch.tensor([0, 2]))
        for _ in range(200):
            sim.step()
        pose = box.pose()
        # every box ends resting on its own env's ground at its own env-frame xy
        torch.testing.assert_close(pose[:, 2], torch.full((3,), 0.05), atol=2e-3, rtol=0)
        torch.testing.assert_close(pose[0, :2], torch.zeros(2), atol=1e-3, rtol=0)
        torch.testing.assert_close(pose[2, :2], torch.tensor([0.3, 0.2]), atol=5e-3, rtol=0)  # impact slide
    finally:
        sim.close()


def test_state_round_trip_and_dimension():
    sim = SimScene(2, 100)
    try:
        sim.add_ground()
        box = _box(sim, "box", 0.3)
        assert sim.state_dim == 13
        for _ in range(10):
            sim.step()
        state = sim.get_state()
        assert state.shape == (2, 13) and state.dtype == torch.float32
        for _ in range(10):
            sim.step()
        sim.set_state(state)
        assert torch.equal(sim.get_state(), state)
        assert np.isfinite(box.velocity().numpy()).all()
    finally:
        sim.close()
