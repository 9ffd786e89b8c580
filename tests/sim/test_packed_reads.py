"""PackedReads (robosim.sim.packed): views read poses, velocities, qpos and qvel from one
`PhysxCpuSystem.pack()` per step. Every quantity it serves must carry the bits of the
per-env SAPIEN read it replaces, for every registered task, after steps and partial
resets; bodies added after the index was built re-index it."""
from __future__ import annotations

import numpy as np
import pytest
import sapien
import torch

import robosim
from robosim.envs.registry import list_tasks
from robosim.sim import SimScene


def _per_env(view, kind: str) -> np.ndarray:
    if kind == "pose":
        return view._read_pose_per_env()
    if kind == "velocity":
        return view._read_velocity_per_env()
    if kind == "root_pose":
        return view._read_root_pose_per_env()
    return view._read_joints_per_env(kind)


@pytest.mark.parametrize("task", list_tasks())
def test_every_served_quantity_has_the_bits_of_the_per_env_read(task):
    env = robosim.make(task, num_envs=3)
    try:
        env.reset(seed=4)
        gen = torch.Generator().manual_seed(0)
        shape = (3, env.single_flat_action_space.shape[0])
        served = set()
        for t in range(12):
            env.step(torch.rand(shape, generator=gen) * 2 - 1)
            if t == 5:
                env.reset(seed=9, options={"env_idx": [1]})
            sim = env.parts.sim
            views = {id(v): v for v in sim._views()}
            robots = list(env.robots.values())
            sim.packed.rows(robots[0].view, "qpos")        # refresh for this step
            for (view_id, kind) in sim.packed._index:
                view = views[view_id]
                assert np.array_equal(sim.packed.rows(view, kind), _per_env(view, kind)), (view.name, kind)
                served.add((view.name, kind))
        # every robot is always served from the pack (one uniform articulation each)
        for robot in env.robots.values():
            name = robot.view.name
            assert {(name, "qpos"), (name, "qvel"), (name, "root_pose")} <= served
    finally:
        env.close()


def _box(sim, name, z):
    def build(scene, i):
        builder = scene.create_actor_builder()
        builder.add_box_collision(half_size=[0.05] * 3)
        builder.initial_pose = sapien.Pose(sim.origins[i].numpy() + [0.1 * i, 0, z])
        return builder.build(name=name)
    return sim.build_actors(name, build)


def test_bodies_added_after_the_index_was_built_are_served_with_the_right_offsets():
    sim = SimScene(2, 100, render=False)
    try:
        sim.add_ground()
        first = _box(sim, "first", 0.3)
        for _ in range(5):
            sim.step()
        before = first.pose()
        assert sim.packed._index is not None and (id(first), "pose") in sim.packed._index
        second = _box(sim, "second", 0.6)                 # shifts nothing before it, adds 2 bodies
        for _ in range(5):
            sim.step()
        assert sim.packed._index is None                  # stale until the next read
        after = first.pose()
        for view in (first, second):
            for kind in ("pose", "velocity"):
                assert (id(view), kind) in sim.packed._index
                assert np.array_equal(sim.packed.rows(view, kind), _per_env(view, kind))
        assert not torch.equal(after, before)             # still falling: the reads are fresh
        assert float(second.pose()[0, 2]) > float(first.pose()[0, 2])
    finally:
        sim.close()
