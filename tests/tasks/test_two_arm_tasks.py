"""TwoArmLift-v1, TwoArmHandover-v1 (two pandas) and TwoArmReach-v1 (two SO-100s): the
scripted solutions succeed, the lift needs both arms, and the vector API runs a
multi-robot env."""
import pytest
import torch

import robosim
import robosim_tasks.two_arm_handover  # noqa: F401  (registers the tasks in a tree never pip-installed)
import robosim_tasks.two_arm_lift  # noqa: F401
import robosim_tasks.two_arm_reach  # noqa: F401
from robosim.core.rotations import quat_yaw
from robosim.envs.solutions import PhasePolicy
from robosim.vector import make_vec
from robosim_tasks.two_arm_common import across_bar, arm_action, rotation_error
from robosim_tasks.two_arm_lift import LEVEL


def _run(env, policy, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(success at any step (N,), largest bar/block tilt seen (N,) or zeros)."""
    success = torch.zeros(env.num_envs, dtype=torch.bool)
    tilt = torch.zeros(env.num_envs)
    for _ in range(steps):
        _, _, _, _, info = env.step(policy())
        success |= info["success"]
        if "bar_tilt" in info:
            tilt = torch.maximum(tilt, info["bar_tilt"])
    return success, tilt


@pytest.mark.parametrize("task", ["TwoArmLift-v1", "TwoArmHandover-v1", "TwoArmReach-v1"])
def test_scripted_solution_succeeds(task):
    env = robosim.make(task, num_envs=2, seed=7)
    try:
        env.reset(seed=[31, 32])
        success, _ = _run(env, env.task.solution_policy(), env.max_episode_steps)
        assert success.all(), f"{task}: scripted solution failed in envs {(~success).nonzero().flatten().tolist()}"
    finally:
        env.close()


class _LeftOnly(PhasePolicy):
    """TwoArmLiftPolicy's moves for the left arm alone; the right holds still, jaws open:
    0 above the left end, 1 down, 2 close for 6 steps, 3 lift."""

    def act(self):
        pose = self.task.bar.pose()
        left = self.robots["left"]
        tcp_pose = left.tcp_pose()
        end = self.task.grasp_points(pose)["left"]
        phase = self.phase
        target = torch.where((phase == 0).unsqueeze(1), end + end.new_tensor([0.0, 0.0, 0.08]), end)
        up = torch.cat([tcp_pose[:, :2], torch.full_like(tcp_pose[:, :1], 0.3)], dim=1)
        target = torch.where((phase == 3).unsqueeze(1), up, target)
        rot = across_bar(quat_yaw(pose[:, 3:]), tcp_pose)
        err = (target - tcp_pose[:, :3]).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015) & (rotation_error(rot, tcp_pose) < 0.05)] = 1
        nxt[(phase == 1) & (err < 0.008)] = 2
        nxt[(phase == 2) & (self.timer >= 6)] = 3
        right = torch.tensor([[0.0] * 6 + [1.0]]).expand(len(pose), 7)
        return torch.cat([arm_action(left, target, rot, phase >= 2), right], dim=1), nxt


def test_one_arm_alone_cannot_lift_the_bar_level():
    env = robosim.make("TwoArmLift-v1", num_envs=2, seed=7)
    try:
        env.reset(seed=[31, 32])
        policy = _LeftOnly(env.task)
        success, tilt = _run(env, policy, env.max_episode_steps)
        assert (policy.phase == 3).all()   # it grasped its end and lifted
        assert not success.any()
        assert (tilt > LEVEL).all()   # held by one end, the bar tips
    finally:
        env.close()


def test_the_vector_api_runs_a_multi_robot_env_with_dict_or_flat_actions():
    venv = make_vec("TwoArmLift-v1", num_envs=2, seed=3)
    try:
        assert list(venv.single_action_space.spaces) == ["left", "right"]
        venv.reset(seed=0)
        obs, reward, terminated, truncated, info = venv.step({"left": torch.zeros(2, 7), "right": torch.zeros(2, 7)})
        assert obs.shape[0] == 2 and reward.shape == (2,)
        obs, *_ = venv.step(torch.zeros(2, 14))
        assert obs.shape[0] == 2
    finally:
        venv.close()


def test_two_robots_run_on_the_emulated_gpu_backend():
    env = robosim.make("TwoArmLift-v1", num_envs=2, sim_backend="physx_gpu_emulated", seed=7)
    try:
        env.reset(seed=[31, 32])
        success, _ = _run(env, env.task.solution_policy(), env.max_episode_steps)
        assert success.all()
    finally:
        env.close()
