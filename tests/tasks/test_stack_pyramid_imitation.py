"""What made StackPyramid-v1 imitable (docs/imitation.md, "StackPyramid: the stage and its
target in the observation"): its observation names the stage (A's turn, then C's), the cube to move
now and where it is to rest, the scripted solution's own reading of the state. Checked
against the cubes' poses along whole scripted episodes (real SAPIEN physics)."""
from __future__ import annotations

import torch

import robosim
from robosim_tasks.common import yaw_to_tcp
from robosim_tasks.stack_pyramid import CUBE_HALF, NEXT_TO

N = 4


def test_stage_entries_follow_a_scripted_episode():
    env = robosim.make("StackPyramid-v1", num_envs=N, obs_mode="state_dict")
    try:
        obs, _ = env.reset(seed=list(range(N)))
        task, policy = env.task, env.task.solution_policy()
        stages, place_errors = [], []
        done = torch.zeros(N, dtype=torch.bool)
        for _ in range(task.max_episode_steps):
            extra = obs["extra"]
            stage = extra["stage"][:, 0]
            assert set(stage.tolist()) <= {0.0, 1.0}
            tcp_pose = task.robot.tcp_pose()
            pose_a, pose_c = task.cube_a.pose(), task.cube_c.pose()
            held = torch.where(stage.bool().unsqueeze(1), pose_c, pose_a)
            assert torch.allclose(extra["tcp_to_held_pos"], held[:, :3] - tcp_pose[:, :3], atol=1e-6)
            assert torch.allclose(extra["held_yaw_to_tcp"], yaw_to_tcp(held, tcp_pose), atol=1e-5)
            stages.append(stage.clone())
            place_errors.append(extra["held_to_place_pos"].norm(dim=1))
            obs, _, terminated, truncated, info = env.step(policy(obs))
            done |= terminated | truncated
            if done.all():
                break
        assert info["success"].all()
        stages, place_errors = torch.stack(stages), torch.stack(place_errors)   # (T, N)
        for env_i in range(N):
            s = stages[:, env_i]
            flips = (s[1:] != s[:-1]).nonzero().flatten()
            # A's turn first, C's once A is set down beside B, and never back
            assert s[0] == 0 and len(flips) == 1, s.tolist()
            # the step A was let go beside B, it rested within 8 mm of the spot named for it
            assert place_errors[flips[0], env_i] < 0.008
        # at the end, C rests on A and B: its place is 3 mm over their apex (A-B midpoint
        # raised by a cube's width), measured here from the poses
        pos_a, pos_b, pos_c = (c.pose()[:, :3] for c in (task.cube_a, task.cube_b, task.cube_c))
        apex = (pos_a + pos_b) / 2 + torch.tensor([0.0, 0.0, 2 * CUBE_HALF + 0.003])
        assert torch.allclose(obs["extra"]["held_to_place_pos"], apex - pos_c, atol=1e-5)
        assert ((pos_a - pos_b)[:, :2].norm(dim=1) <= NEXT_TO).all()
    finally:
        env.close()
