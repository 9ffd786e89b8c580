"""PickObject-v1: per-env procedural objects from a pool, a scripted solution that picks them."""
from __future__ import annotations

import torch

import robosim
import robosim_tasks.pick_object  # noqa: F401
from robosim.record.evaluate import evaluate


def test_scripted_solution_picks_most_objects():
    env = robosim.make("PickObject-v1", num_envs=16, seed=0)
    try:
        policy = env.task.solution_policy()
        result = evaluate(env, lambda obs: policy(), 64, seed=0, progress=False)
        assert result.episodes == 64
        assert sum(result.success) >= 0.8 * 64, sum(result.success)
    finally:
        env.close()


def test_objects_differ_per_env_and_episode():
    env = robosim.make("PickObject-v1", num_envs=8, seed=1)
    try:
        env.reset(seed=1)
        kinds = env.task.kinds
        assert len({tuple(k.tolist()) for k in kinds}) > 1            # envs hold different pools
        assert len(set(env.task.rest_z.flatten().tolist())) > 8       # sizes vary
        first = env.task.obj.active.copy()
        seen = {tuple(first)}
        for _ in range(4):
            env.reset()
            seen.add(tuple(env.task.obj.active))
        assert len(seen) > 1                                          # new objects per episode, no rebuild
        masses = [env.task.obj.bodies[0][k].mass for k in range(env.task.pool_size)]
        assert min(masses) >= 0.02 and max(masses) <= 0.2 and len(set(masses)) > 1
    finally:
        env.close()


def test_state_round_trip_restores_the_active_variant():
    env = robosim.make("PickObject-v1", num_envs=4, seed=2)
    try:
        env.reset(seed=2)
        state = env.get_state()
        active = env.task.obj.active.copy()
        for _ in range(3):
            env.reset()
        env.set_state(state)
        assert (env.task.obj.active == active).all()
        assert torch.equal(env.get_state(), state)
    finally:
        env.close()
