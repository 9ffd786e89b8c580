"""RolloutCollector against a hand-stepped reference on a raw BaseEnv, in each autoreset
mode: same obs, actions, rewards, flags, valid rows, true next obs and bootstrap values.
Episodes end by success (termination) and by the time limit (truncation) at different
steps in different envs."""
from __future__ import annotations

import pytest
import torch
from gymnasium.vector import AutoresetMode

import robosim
from robosim.core.tree import tree_map
from robosim.rollout import RolloutCollector
from robosim.vector import tree

N, T, HORIZON = 3, 14, 6
GAINS = torch.tensor([12.0, 6.0, 0.0])  # env 0 succeeds fast, env 1 later, env 2 never (truncates)


def policy(obs):
    """Deterministic in obs: move the tcp toward the goal with a per-env gain."""
    delta = (obs["desired_goal"] - obs["achieved_goal"]) * GAINS[:, None]
    action = torch.cat([delta.clamp(-1, 1), torch.ones(N, 1)], dim=1)
    return action, -action.abs().sum(1), value_fn(obs)


def value_fn(obs):
    return obs["desired_goal"].sum(1) - obs["achieved_goal"][:, 2]


def make_env(**kw):
    return robosim.make("Reach-v1", num_envs=N, max_episode_steps=HORIZON, **kw)


def reference(mode):
    """Hand-stepped gymnasium semantics on the batched env: rows of (obs, action, reward,
    terminated, truncated, valid, next_obs)."""
    env = make_env()
    obs, _ = env.reset(seed=5)
    ended = torch.zeros(N, dtype=torch.bool)
    rows = []
    for _ in range(T):
        action = policy(obs)[0]
        if mode == AutoresetMode.NEXT_STEP:
            nxt, r, te, tr, _ = env.step(torch.where(ended[:, None], torch.zeros_like(action), action))
            if ended.any():
                reset_obs, _ = env.reset(options={"env_idx": ended.nonzero().squeeze(1)})
                nxt = tree.where(ended, reset_obs, nxt)
                r, te, tr = torch.where(ended, 0.0, r), te & ~ended, tr & ~ended
            rows.append((obs, action, r, te, tr, ~ended, nxt))
            ended, obs = te | tr, nxt
        else:  # SAME_STEP and DISABLED: the next obs is the step's; ended envs restart at once
            nxt, r, te, tr, _ = env.step(action)
            rows.append((obs, action, r, te, tr, torch.ones(N, dtype=torch.bool), nxt))
            done = te | tr
            obs = nxt
            if done.any():
                reset_obs, _ = env.reset(options={"env_idx": done.nonzero().squeeze(1)})
                obs = tree.where(done, reset_obs, nxt)
    env.close()
    return rows


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_collector_matches_hand_stepped_reference(mode):
    expected = reference(mode)
    venv = robosim.make_vec("Reach-v1", num_envs=N, autoreset_mode=mode, max_episode_steps=HORIZON)
    collector = RolloutCollector(venv, T)
    collector.reset(seed=5)
    next_obs = []
    original_step = collector.step

    def recording_step(p):
        tr = original_step(p)
        next_obs.append(tree_map(torch.clone, tr.next_obs))
        return tr

    collector.step = recording_step
    roll = collector.collect(policy, value_fn)
    venv.close()
    terminated = torch.stack([row[3] for row in expected])
    truncated = torch.stack([row[4] for row in expected])
    assert terminated.any() and truncated.any(), "the reference must end episodes both ways"
    for t, (obs, action, r, te, tr, valid, nxt) in enumerate(expected):
        for key in obs:
            assert torch.equal(roll.obs[key][t], obs[key]), (t, key)
            assert torch.equal(next_obs[t][key], nxt[key]), (t, key)
        assert torch.equal(roll.actions[t], action)
        assert torch.equal(roll.rewards[t], r)
        assert torch.equal(roll.terminated[t], te) and torch.equal(roll.truncated[t], tr)
        assert torch.equal(roll.valid[t], valid), t
        # bootstrap: V(true next obs) wherever the episode did not terminate
        boot = valid & ~te
        assert torch.allclose(roll.next_values[t][boot], value_fn(nxt)[boot]), t
    if mode == AutoresetMode.NEXT_STEP:  # no row spans a boundary: the row after an end is not a transition
        ends = (roll.terminated | roll.truncated)[:-1]
        assert not (ends & roll.valid[1:]).any()
        assert (~roll.valid).any()
    else:
        assert roll.valid.all()


def test_ignore_terminations_runs_fixed_horizon_episodes():
    venv = robosim.make_vec("Reach-v1", num_envs=N, autoreset_mode=AutoresetMode.SAME_STEP,
                            max_episode_steps=HORIZON, ignore_terminations=True)
    collector = RolloutCollector(venv, 2 * HORIZON)
    collector.reset(seed=5)
    roll = collector.collect(policy, value_fn)
    stats = collector.pop_episode_stats()
    venv.close()
    assert not roll.terminated.any()
    # every episode lasts exactly HORIZON steps, though env 0 succeeds within it
    assert roll.truncated[HORIZON - 1].all() and roll.truncated[2 * HORIZON - 1].all()
    assert roll.truncated.sum() == 2 * N
    assert stats["episodes"] == 2 * N and stats["episode_len"] == HORIZON
    assert stats["success_once"] > 0


@pytest.fixture(scope="module")
def venv():
    env = robosim.make_vec("Reach-v1", num_envs=N, autoreset_mode=AutoresetMode.SAME_STEP, max_episode_steps=HORIZON)
    yield env
    env.close()


def test_bad_policy_outputs_name_step_and_env(venv):
    collector = RolloutCollector(venv, 4)
    collector.reset(seed=0)
    good = torch.zeros(N, 4)
    with pytest.raises(ValueError, match=r"step 0: action must have shape \(3, 4\), got \(3, 3\)"):
        collector.step(lambda obs: torch.zeros(N, 3))
    with pytest.raises(ValueError, match="step 0: action must have dtype torch.float32, got torch.float64"):
        collector.step(lambda obs: good.double())
    with pytest.raises(ValueError, match="step 0: action must be on the env's device cpu, got meta"):
        collector.step(lambda obs: good.to("meta"))
    with pytest.raises(TypeError, match="step 0: action must be a torch.Tensor"):
        collector.step(lambda obs: good.numpy())
    collector.step(lambda obs: good)
    collector.step(lambda obs: good)
    bad = good.clone()
    bad[2, 1] = float("nan")
    with pytest.raises(ValueError, match="step 2: action must be finite, got NaN/inf for env index 2"):
        collector.step(lambda obs: bad)


def test_buffers_that_do_not_fit_are_refused_before_allocation(venv):
    with pytest.raises(ValueError, match=r"rollout buffers \(num_steps=10000000000, num_envs=3\) needs [0-9.]+ GiB"):
        RolloutCollector(venv, 10_000_000_000)
