"""`robosim demos generate --action-noise SIGMA` (DART): the executed trajectory differs
from the noiseless one, the recorded actions are the clean scripted ones, the executed
ones are re-created from the seed, and a seed decides the whole file."""
from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

import robosim
from robosim.cli import main
from robosim.demos import generate_demos
from robosim.demos.generate import executed_actions
from robosim.record import TrajectoryFile
from tests.demos.conftest import SEED

SIGMA = 0.1


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """(path, report) of 3 PickCube demos with DART noise, generated like the `demos` fixture."""
    path = str(tmp_path_factory.mktemp("dart") / "pick_noisy.h5")
    return path, generate_demos("PickCube-v1", 3, path, num_envs=2, seed=SEED, action_noise=SIGMA)


def _episodes(path: str) -> dict:
    traj = TrajectoryFile(path)
    return {e.seed: e for e in (traj.episode(k) for k in range(len(traj)))}


def _run_actions(traj: TrajectoryFile, seed: int, actions: np.ndarray) -> np.ndarray:
    """States (T+1, S) of a 1-env copy of the recording's env reset with `seed` and stepped through `actions`."""
    env = robosim.make(traj.spec.replace(num_envs=1, seed=[0]))
    try:
        env.reset(seed=[seed])
        states = [env.get_state()[0].numpy().copy()]
        for a in actions:
            env.step(torch.from_numpy(a[None]))
            states.append(env.get_state()[0].numpy().copy())
        return np.stack(states)
    finally:
        env.close()


def test_noise_changes_the_executed_trajectory(noisy):
    """The recorded (clean) actions executed without noise lead elsewhere than the recorded run."""
    traj = TrajectoryFile(noisy[0])
    for k in range(len(traj)):
        episode = traj.episode(k)
        states = _run_actions(traj, episode.seed, episode.actions)
        assert np.array_equal(states[0], episode.states[0])   # same seeded start
        assert np.abs(states[1:] - episode.states[1:]).max() > 1e-3
    with h5py.File(noisy[0], "r") as f:
        assert json.loads(f.attrs["demos"])["action_noise"] == SIGMA
    assert noisy[1].tried >= noisy[1].kept == 3   # the yield is still counted


def test_recorded_actions_are_the_clean_scripted_ones(noisy):
    """Run the scripted policy in lock step: each recorded action is what the policy asked
    for in the recorded state, and executing it plus the episode's noise gives the
    recorded next state bit for bit."""
    traj = TrajectoryFile(noisy[0])
    episode = traj.episode(0)
    executed = executed_actions(episode, SIGMA)
    noise = executed - episode.actions
    assert 0.7 * SIGMA < noise.std() < 1.3 * SIGMA and abs(noise.mean()) < 0.1
    env = robosim.make(traj.spec.replace(num_envs=1, seed=[0]))
    try:
        policy = env.task.solution_policy()
        env.reset(seed=[episode.seed])
        assert np.array_equal(env.get_state()[0].numpy(), episode.states[0])
        for t in range(episode.length):
            assert np.array_equal(policy()[0].cpu().numpy(), episode.actions[t])
            env.step(torch.from_numpy(executed[t:t + 1]))
            assert np.array_equal(env.get_state()[0].numpy(), episode.states[t + 1])
    finally:
        env.close()


def test_a_seed_decides_the_noisy_file(noisy, tmp_path):
    again = str(tmp_path / "again.h5")
    other = str(tmp_path / "other.h5")
    generate_demos("PickCube-v1", 3, again, num_envs=2, seed=SEED, action_noise=SIGMA)
    generate_demos("PickCube-v1", 3, other, num_envs=2, seed=SEED + 100, action_noise=SIGMA)
    first, second, third = _episodes(noisy[0]), _episodes(again), _episodes(other)
    assert first.keys() == second.keys()
    for seed, e in first.items():
        assert np.array_equal(e.states, second[seed].states) and np.array_equal(e.actions, second[seed].actions)
    assert not set(first) & set(third)


@pytest.mark.parametrize("value", [-0.1, float("nan"), True, "0.1"])
def test_bad_noise_is_refused_before_anything_is_written(tmp_path, value):
    out = tmp_path / "x.h5"
    with pytest.raises(ValueError, match="action_noise \\(--action-noise\\) must be a number >= 0"):
        generate_demos("PickCube-v1", 1, str(out), action_noise=value)
    assert not out.exists()


def test_cli_flag(tmp_path, capsys):
    out = tmp_path / "cli.h5"
    assert main(["demos", "generate", "PushCube-v1", "-n", "1", "--out", str(out), "--num-envs", "1",
                 "--action-noise", "0.1"]) == 0
    assert "yield" in capsys.readouterr().out
    with h5py.File(out, "r") as f:
        assert json.loads(f.attrs["demos"])["action_noise"] == 0.1
    assert main(["demos", "generate", "PushCube-v1", "-n", "1", "--out", str(tmp_path / "bad.h5"),
                 "--action-noise", "-1"]) == 2
    assert "--action-noise" in capsys.readouterr().err
