"""Render systems exist only where cameras are wanted (a GPU host without Vulkan, or
under MIG, can then still simulate state-only envs)."""
from __future__ import annotations

import os

import mani_skill
import sapien
import torch

from robosim.sim import Box, RigidObject, create_sim_scene

PANDA = os.path.join(os.path.dirname(mani_skill.__file__), "assets", "robots", "panda", "panda_v2.urdf")


def _has_render_system(scene: sapien.Scene) -> bool:
    try:
        scene.get_system("render")
    except RuntimeError:
        return False
    return True


def _build(n: int, render: bool):
    sim = create_sim_scene("physx_cpu", n, 100, render=render)
    sim.add_ground()
    cube = sim.add_object("cube", RigidObject([Box(0.02)], pose=(0.1, 0.0, 0.02, 1, 0, 0, 0)))
    robot = sim.load_urdf("panda", PANDA, pose=(-0.615, 0, 0, 1, 0, 0, 0))
    sim.finalize()
    return sim, cube, robot


def test_state_only_scene_of_64_envs_creates_no_render_system_and_simulates():
    sim, cube, robot = _build(64, render=False)
    try:
        assert sum(_has_render_system(s) for s in sim.sub_scenes) == 0
        rendered = [e.name for s in sim.sub_scenes for e in s.entities
                    if e.find_component_by_type(sapien.render.RenderBodyComponent) is not None]
        assert rendered == []
        cube.set_pose(torch.tensor([[0.1, 0.0, 0.3, 1, 0, 0, 0]]).repeat(64, 1))
        for _ in range(50):     # 0.5 s: the cube falls 0.28 m and lands on the shared plane
            sim.step()
        z = cube.pose()[:, 2]
        assert torch.allclose(z, torch.full((64,), 0.02), atol=2e-3), z
        assert robot.qpos().shape == (64, 9)
    finally:
        sim.close()


def test_scene_with_rendering_keeps_one_render_world_and_floor_per_env():
    sim, _, _ = _build(2, render=True)
    try:
        assert all(_has_render_system(s) for s in sim.sub_scenes)
        for scene in sim.sub_scenes:
            names = [e.name for e in scene.entities if e.find_component_by_type(sapien.render.RenderBodyComponent)]
            assert "floor" in names and "cube" in names
    finally:
        sim.close()


def test_state_only_env_of_64_envs_has_no_render_system():
    import robosim

    env = robosim.make("PickCube-v1", num_envs=64, obs_mode="state")
    try:
        assert sum(_has_render_system(s) for s in env.sim.sub_scenes) == 0
        env.reset(seed=0)
        obs, reward, *_ = env.step(torch.zeros(64, *env.single_action_space.shape))
        assert obs.shape[0] == 64 and torch.isfinite(reward).all()
        assert env.render() is None
    finally:
        env.close()


def test_env_with_a_camera_obs_or_render_mode_renders():
    import robosim

    for kwargs in ({"obs_mode": "rgb"}, {"render_mode": "rgb_array"}):
        env = robosim.make("PickCube-v1", num_envs=2, sensor_configs={"width": 32, "height": 32},
                           render_size=(32, 32), **kwargs)
        try:
            assert all(_has_render_system(s) for s in env.sim.sub_scenes)
        finally:
            env.close()
