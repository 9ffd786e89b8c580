"""ManiSkill3's PPO baseline loop (examples/baselines/ppo/ppo.py, CleanRL style) on
robosim with the diff of docs/from-maniskill.md: envs from gymnasium.make_vec with
SAME_STEP autoreset, ignore_terminations and reconfiguration_freq=None as ManiSkill
passes them, reward_mode="normalized_dense", info["final_obs"] for the timeout bootstrap
and final_info["episode"] for metrics. The loop below is written for this test in the
baseline's shape; it runs a few iterations and checks what the baseline reads."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import robosim  # noqa: F401  (registers robosim/<task> in gymnasium)

NUM_ENVS, NUM_STEPS, ITERATIONS, GAMMA, LAMBDA = 8, 20, 3, 0.8, 0.9


def make_envs(num_envs, partial_reset):
    # the diff: gym.make + ManiSkillVectorEnv(...) -> one gym.make_vec call
    return gym.make_vec("robosim/PushCube-v1", num_envs=num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
                        ignore_terminations=not partial_reset, reconfiguration_freq=None, obs_mode="state",
                        reward_mode="normalized_dense", render_mode=None, sim_backend="physx_cpu",
                        max_episode_steps=15)


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        obs_dim = int(np.prod(envs.single_observation_space.shape))
        act_dim = int(np.prod(envs.single_action_space.shape))
        self.critic = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor_mean = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, act_dim))
        self.actor_logstd = nn.Parameter(torch.full((1, act_dim), -0.5))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        probs = torch.distributions.Normal(mean, self.actor_logstd.expand_as(mean).exp())
        action = probs.sample() if action is None else action
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


def test_maniskill_ppo_baseline_loop_runs_on_robosim():
    torch.manual_seed(0)
    envs, eval_envs = make_envs(NUM_ENVS, partial_reset=True), make_envs(4, partial_reset=False)
    agent = Agent(envs)
    optimizer = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5)
    shape = (NUM_STEPS, NUM_ENVS)
    obs = torch.zeros(shape + envs.single_observation_space.shape)
    actions = torch.zeros(shape + envs.single_action_space.shape)
    logprobs, rewards, dones, values, final_values = (torch.zeros(shape) for _ in range(5))
    low = torch.from_numpy(envs.single_action_space.low)
    high = torch.from_numpy(envs.single_action_space.high)
    next_obs, _ = envs.reset(seed=1)
    next_done = torch.zeros(NUM_ENVS)
    logged, eval_logged = {}, {}
    for _ in range(ITERATIONS):
        # evaluation as the baseline does it: fixed-horizon episodes, metrics from final_info["episode"]
        eval_obs, _ = eval_envs.reset()
        for _ in range(15):
            with torch.no_grad():
                eval_obs, _, _, _, eval_infos = eval_envs.step(agent.actor_mean(eval_obs))
            if "final_info" in eval_infos:
                mask = eval_infos["_final_info"]
                for k, v in eval_infos["final_info"]["episode"].items():
                    eval_logged.setdefault(k, []).append(v[mask].float().mean().item())
        final_values.zero_()
        for step in range(NUM_STEPS):
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob
            next_obs, reward, terminations, truncations, infos = envs.step(torch.clamp(action, low, high))
            next_done = torch.logical_or(terminations, truncations).float()
            rewards[step] = reward.view(-1)
            if "final_info" in infos:
                done_mask = infos["_final_info"]
                with torch.no_grad():  # the diff: infos["final_observation"] -> infos["final_obs"]
                    final_values[step, torch.arange(NUM_ENVS)[done_mask]] = agent.get_value(
                        infos["final_obs"][done_mask]).view(-1)
                for k, v in infos["final_info"]["episode"].items():
                    logged.setdefault(k, []).append(v[done_mask].float().mean().item())
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(NUM_STEPS)):
                if t == NUM_STEPS - 1:
                    next_not_done, nextvalues = 1.0 - next_done, next_value
                else:
                    next_not_done, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                real_next_values = next_not_done * nextvalues + final_values[t]
                delta = rewards[t] + GAMMA * real_next_values - values[t]
                advantages[t] = lastgaelam = delta + GAMMA * LAMBDA * next_not_done * lastgaelam
            returns = advantages + values
        b_obs = obs.reshape((-1,) + envs.single_observation_space.shape)
        _, newlogprob, entropy, newvalue = agent.get_action_and_value(
            b_obs, actions.reshape((-1,) + envs.single_action_space.shape))
        ratio = (newlogprob - logprobs.reshape(-1)).exp()
        adv = advantages.reshape(-1)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)).mean()
        v_loss = 0.5 * ((newvalue.view(-1) - returns.reshape(-1)) ** 2).mean()
        loss = pg_loss + 0.5 * v_loss - 0.0 * entropy.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        assert math.isfinite(loss.item())
    envs.close()
    eval_envs.close()
    for metrics in (logged, eval_logged):  # the names the baseline logs
        assert {"success_once", "return", "episode_len", "reward"} <= set(metrics)
        assert all(math.isfinite(x) for values_ in metrics.values() for x in values_)
    assert set(eval_logged["episode_len"]) == {15.0}  # ignore_terminations: fixed horizon
    assert all(-1.0 <= r <= 0.0 for r in logged["reward"])  # normalized_dense per-step mean in [-1, 0]
