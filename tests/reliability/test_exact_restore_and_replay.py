"""Exact or honest: restore_state continues bit-identically; replay by states is exact
by construction; replay by actions is exact with physics_isolation="separate" and
reports its divergence otherwise."""
from __future__ import annotations

import pytest
import torch

import robosim
from robosim.record import RecordEpisode, replay
from robosim.record.evaluate import evaluate
from robosim.record.policies import scripted


def _actions(env, steps: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
    return low + torch.rand(steps, env.num_envs, len(low), generator=g) * (high - low)


@pytest.mark.parametrize("isolation", ["shared", "separate"])
def test_restore_state_then_the_same_actions_repeats_the_run_bit_for_bit(isolation):
    env = robosim.make("PickCube-v1", num_envs=3, control_mode="pd_joint_pos", physics_isolation=isolation)
    try:
        actions = _actions(env, 30, 0)
        env.reset(seed=5)
        for t in range(10):
            env.step(actions[t])
        sid = env.save_state()
        first = [env.step(actions[t])[0] for t in range(10, 30)]
        env.restore_state(sid)
        second = [env.step(actions[t])[0] for t in range(10, 30)]
        assert all(torch.equal(a, b) for a, b in zip(first, second))
    finally:
        env.close()


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """The README's eval example (4 envs, scripted policy) recorded in both modes."""
    out = {}
    for isolation in ("shared", "separate"):
        path = str(tmp_path_factory.mktemp(isolation) / "eval.h5")
        env = robosim.make("PickCube-v1", num_envs=4, physics_isolation=isolation)
        with RecordEpisode(env, trajectory=path) as recorder:
            evaluate(recorder, scripted(recorder), 8, seed=0)
        out[isolation] = path
    return out


def test_replay_by_states_is_exact(recordings):
    report = replay(recordings["shared"], mode="states")
    assert report.episodes == 8 and report.exact


def test_replay_by_actions_is_exact_with_separate_physics(recordings):
    report = replay(recordings["separate"], mode="actions")
    assert report.episodes == 8 and report.exact, report.summary()


def test_replay_by_actions_of_a_shared_run_reports_every_episode(recordings):
    report = replay(recordings["shared"], mode="actions")
    assert report.episodes == 8 and len(report.max_abs_error) == 8
    # the first round starts from one full reset in both runs; it replays exactly
    assert report.max_abs_error[:4] == [0.0] * 4
    summary = report.summary()
    assert summary.startswith("replayed 8 episodes") and ("(exact)" in summary or "diverge" in summary)
