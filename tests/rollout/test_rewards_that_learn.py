"""Every built-in task's dense reward pays less for any non-success step than for the
success step, so hovering near success never beats succeeding.

Argument (checked numerically below): with r_fail <= r_max < r_succ = 0 for every
non-success step, a run that succeeds at step k returns G_succ = sum_{t<k} g^t r_t + g^k * 0
(the episode ends), while staying in the best non-success state from step k on returns
at most sum_{t<k} g^t r_t + g^k r_max / (1 - g) < G_succ, whether the learner bootstraps
through the end of an episode or not, for every discount g in [0.8, 0.99]."""
from __future__ import annotations

import pytest
import torch

import robosim

GAMMAS = (0.8, 0.9, 0.95, 0.99)


def rollout_rewards(task_id, policy_kind):
    env = robosim.make(task_id, num_envs=2)
    try:
        env.reset(seed=4)
        solution = env.task.solution_policy() if policy_kind == "scripted" else None
        gen = torch.Generator().manual_seed(0)
        rewards, successes = [], []
        for _ in range(env.max_episode_steps):
            if solution is not None:
                action = solution()
            else:
                low = torch.as_tensor(env.single_action_space.low)
                high = torch.as_tensor(env.single_action_space.high)
                action = low + torch.rand(2, len(low), generator=gen) * (high - low)
            _, reward, _, _, info = env.step(action)
            rewards.append(reward.clone())
            successes.append(info["success"].clone())
        return torch.stack(rewards), torch.stack(successes), float(env.task.max_dense_reward)
    finally:
        env.close()


@pytest.mark.parametrize("task_id", ["Reach-v1", "PushCube-v1", "PickCube-v1", "StackCube-v1"])
def test_success_pays_most_and_hovering_never_wins(task_id):
    r_scripted, s_scripted, scale = rollout_rewards(task_id, "scripted")
    r_random, s_random, _ = rollout_rewards(task_id, "random")
    rewards, success = torch.cat([r_scripted, r_random]), torch.cat([s_scripted, s_random])
    assert s_scripted.any(), f"the scripted {task_id} policy must reach success for this check"
    assert (~success).any()
    r_succ = rewards[success]
    r_max_non_success = rewards[~success].max().item()
    assert torch.all(r_succ == 0.0)
    assert r_max_non_success < 0.0
    # normalized_dense = dense / max_dense_reward stays in [-1, 0]
    assert rewards.min().item() / scale >= -1.0 and rewards.max().item() / scale <= 0.0
    for env_i in range(r_scripted.shape[1]):
        hits = s_scripted[:, env_i].nonzero()
        if len(hits) == 0:
            continue
        k = int(hits[0])
        for g in GAMMAS:
            prefix = sum(g ** t * r_scripted[t, env_i].item() for t in range(k))
            succeed = prefix + g ** k * r_scripted[k, env_i].item()
            hover_forever = prefix + g ** k * r_max_non_success / (1 - g)
            assert hover_forever < succeed, (task_id, g)


def test_stack_cube_pays_for_letting_go_over_cube_b():
    """Holding cube A on B pays less than having let go of it there (before the success
    step): a learner that reaches B with A in hand has a reason to open the jaws."""
    env = robosim.make("StackCube-v1", num_envs=2)
    try:
        env.reset(seed=4)
        solution = env.task.solution_policy()
        held, released = {}, {}
        for _ in range(env.max_episode_steps):
            _, reward, _, _, info = env.step(solution())
            for i in range(2):
                if info["success"][i] or not info["is_cube_a_on_b"][i]:
                    continue
                bucket = held if info["is_cube_a_grasped"][i] else released
                bucket.setdefault(i, []).append(float(reward[i]))
        assert held and released, (held, released)
        for i in set(held) & set(released):
            assert min(released[i]) > max(held[i]), (i, held[i], released[i])
    finally:
        env.close()
