"""Episode statistics count episodes in which the physics faulted (issue: faults are
contained per env and counted)."""
from __future__ import annotations

import torch
from gymnasium.vector import AutoresetMode

import robosim
from robosim.vector import EpisodeStatistics


def test_a_faulted_episode_is_counted_once_and_only_for_its_env():
    venv = EpisodeStatistics(robosim.make_vec("PickCube-v1", num_envs=3, max_episode_steps=4,
                                              autoreset_mode=AutoresetMode.SAME_STEP))
    try:
        venv.reset(seed=0)
        base = venv.unwrapped.env if hasattr(venv.unwrapped, "env") else venv.unwrapped
        env = getattr(base, "env", base)
        cube = env.task.cube
        # a runaway velocity written into env 1's cube through SAPIEN (not the checked API)
        cube.bodies[1].set_linear_velocity([500.0, 0.0, 0.0])
        env.sim.read_cache.invalidate()
        action = torch.zeros(3, *venv.single_action_space.shape)
        obs, reward, terminated, truncated, info = venv.step(action)
        assert terminated.tolist() == [False, True, False]          # the fault ends env 1's episode
        assert info["final_info"]["sim_fault"].tolist()[1] > 0     # SAME_STEP: the ending step's info
        assert info["episode"]["sim_fault_once"].tolist()[1]
        assert venv.fault_episodes == 1
        for _ in range(4):
            venv.step(action)
        assert venv.fault_episodes == 1            # the other envs' episodes ended without faults
    finally:
        venv.close()
