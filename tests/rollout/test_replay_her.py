"""ReplayBuffer with HER on Reach-v1: relabeled goals come from the same episode's future,
rewards match Reach's documented reward computed here by hand, checkpoints refuse other
layouts."""
from __future__ import annotations

import io
import json
import math

import pytest
import torch
from gymnasium.vector import AutoresetMode

import robosim
from robosim.rollout import ReplayBuffer, RolloutCollector, load_policy, save_policy
from robosim.rollout.checkpoint import FORMAT

N, HORIZON = 2, 5


def reach_dense(achieved, goal):
    """Reach-v1's docstring: 0 within 5 cm of the goal, else -tanh(5 d); plain Python."""
    d = math.dist(achieved, goal)
    return 0.0 if d < 0.05 else -math.tanh(5 * d)


@pytest.fixture(scope="module")
def venv():
    env = robosim.make_vec("Reach-v1", num_envs=N, autoreset_mode=AutoresetMode.SAME_STEP, max_episode_steps=HORIZON)
    yield env
    env.close()


def test_her_relabels_with_future_achieved_goals(venv):
    collector = RolloutCollector(venv, 1)
    collector.reset(seed=3)
    buffer = ReplayBuffer(100, venv.single_observation_space, venv.single_action_space, N,
                          her_ratio=1.0, compute_reward=venv.compute_reward)
    gen = torch.Generator().manual_seed(0)
    achieved = [[] for _ in range(N)]  # per env: next achieved goal of each stored step
    for _ in range(2 * HORIZON + 2):  # two full episodes per env, then two steps of a running one
        action = torch.rand(N, 4, generator=gen) * 2 - 1
        tr = collector.step(lambda obs, action=action: action)
        buffer.add(tr)
        for n in range(N):
            achieved[n].append(tr.next_obs["achieved_goal"][n].tolist())
    assert len(buffer) == N * (2 * HORIZON + 2)
    batch = buffer.sample(400, torch.Generator().manual_seed(1))
    obs_goal, next_goal = batch["obs"]["desired_goal"], batch["next_obs"]["desired_goal"]
    assert torch.equal(obs_goal, next_goal)
    relabeled = 0
    for i in range(400):
        goal = obs_goal[i].tolist()
        ach = batch["next_obs"]["achieved_goal"][i].tolist()
        n, step = next((n, s) for n in range(N) for s in range(len(achieved[n])) if achieved[n][s] == ach)
        if step >= 2 * HORIZON:  # the running episode has no known end: never relabeled
            assert goal != ach or batch["rewards"][i] == pytest.approx(0.0)
            continue
        episode_end = (step // HORIZON + 1) * HORIZON - 1
        future = [tuple(achieved[n][s]) for s in range(step, episode_end + 1)]
        assert tuple(goal) in future, (i, step)
        relabeled += 1
        assert batch["rewards"][i].item() == pytest.approx(reach_dense(ach, goal), abs=1e-6)
    assert relabeled > 300


def test_buffer_checks(venv):
    with pytest.raises(ValueError, match="her_ratio must be a number in \\[0, 1\\], got 2"):
        ReplayBuffer(10, venv.single_observation_space, venv.single_action_space, N, her_ratio=2)
    with pytest.raises(ValueError, match="her_ratio > 0 needs compute_reward"):
        ReplayBuffer(10, venv.single_observation_space, venv.single_action_space, N, her_ratio=0.5)
    with pytest.raises(ValueError, match=r"replay buffer \(capacity=1000000000000, num_envs=2\) needs [0-9.]+ GiB"):
        ReplayBuffer(10**12, venv.single_observation_space, venv.single_action_space, N)


class Linear(torch.nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.layer = torch.nn.Linear(dim_in, dim_out)

    def forward(self, x):
        return torch.tanh(self.layer(x))


def test_checkpoint_round_trip_and_refusal(venv, tmp_path):
    dim = sum(s.shape[0] for s in venv.single_observation_space.spaces.values())
    actor = Linear(dim, 4)
    path = tmp_path / "policy.pt"
    save_policy(path, actor, venv)
    policy = load_policy(path, venv.unwrapped_env)
    obs, _ = venv.reset(seed=0)
    # the env's key order (robosim.core.tree), written out here, not sorted keys
    flat = torch.cat([obs["observation"], obs["achieved_goal"], obs["desired_goal"]], dim=1)
    assert torch.allclose(policy(obs), actor(flat))
    other = robosim.make("PushCube-v1", num_envs=1)
    try:
        with pytest.raises(ValueError, match="'task': 'Reach-v1'.*'task': 'PushCube-v1'"):
            load_policy(path, other)
    finally:
        other.close()
    (tmp_path / "junk.pt").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="is not a robosim policy"):
        load_policy(tmp_path / "junk.pt", venv)


def resave_with_obs_order(path, out, names):
    """Copy the checkpoint at `path` to `out` with its saved obs layout put in the order
    `names` (what a checkpoint saved when flatten_obs sorted dict keys holds)."""
    files = {"robosim.json": ""}
    program = torch.export.load(io.BytesIO(path.read_bytes()), extra_files=files)
    meta = json.loads(files["robosim.json"])
    by_name = {name: shape for name, shape in meta["layout"]["obs"]}
    meta["layout"]["obs"] = [[name, by_name[name]] for name in names]
    data = io.BytesIO()
    torch.export.save(program, data, extra_files={"robosim.json": json.dumps(meta)})
    out.write_bytes(data.getvalue())


def test_checkpoint_layout_is_the_flatten_order_and_an_old_sorted_one_is_refused(venv, tmp_path):
    path = tmp_path / "policy.pt"
    save_policy(path, Linear(9 + 9 + 7 + 3 + 3, 4), venv)
    files = {"robosim.json": ""}
    torch.export.load(io.BytesIO(path.read_bytes()), extra_files=files)
    meta = json.loads(files["robosim.json"])
    assert meta["format"] == FORMAT
    assert [name for name, _ in meta["layout"]["obs"]] == ["observation", "achieved_goal", "desired_goal"]

    old = tmp_path / "sorted.pt"
    resave_with_obs_order(path, old, ["achieved_goal", "desired_goal", "observation"])
    with pytest.raises(ValueError, match=r"in the order \['achieved_goal', 'desired_goal', 'observation'\], but "
                                         r"flatten_obs concatenates this env's in the order "
                                         r"\['observation', 'achieved_goal', 'desired_goal'\]"):
        load_policy(old, venv.unwrapped_env)

    policy = load_policy(path, venv.unwrapped_env)
    obs, _ = venv.reset(seed=0)
    reordered = {k: obs[k] for k in ("desired_goal", "observation", "achieved_goal")}
    with pytest.raises(ValueError, match=r"obs must have the leaves \['observation', 'achieved_goal', "
                                         r"'desired_goal'\] in that order .*got \['desired_goal', 'observation', "
                                         r"'achieved_goal'\]"):
        policy(reordered)
