"""Replay by actions follows the recording and never calls a broken recording exact.

- a NaN in a recorded state is a divergence (error inf), and `robosim replay --strict`
  exits 1 (max(0.0, nan) used to stay 0.0 and call it exact);
- with physics_isolation="separate" every episode replays with error 0 whatever its
  env slot did before: a reset clears what PhysX carries across it (contact caches,
  sleeping), and the replayer resets each slot on the recording's schedule."""
from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

import robosim
from robosim.cli import main
from robosim.record import RecordEpisode, replay
from robosim.record.evaluate import evaluate
from robosim.record.policies import scripted


@pytest.fixture(scope="module")
def nan_recording(tmp_path_factory):
    """A 1-episode, 5-step PickCube recording whose state at step 3 holds a NaN."""
    path = str(tmp_path_factory.mktemp("nan") / "nan.h5")
    env = robosim.make("PickCube-v1", num_envs=1, physics_isolation="separate", max_episode_steps=5)
    with RecordEpisode(env, trajectory=path) as recorder:
        evaluate(recorder, scripted(recorder), 1, seed=0)
    with h5py.File(path, "r+") as f:
        states = f["episode_00000"]["states"]
        data = states[()]
        data[3, 10] = np.nan
        states[...] = data
    return path


def test_a_nan_state_is_a_divergence_not_exact(nan_recording):
    report = replay(nan_recording, mode="actions")
    assert not report.exact and report.worst == float("inf")
    assert report.first_divergence == [3] and "1 of 1 episodes diverge" in report.summary()


def test_replay_strict_exits_1_on_a_nan_state(nan_recording, capsys):
    assert main(["replay", nan_recording, "--strict"]) == 1
    assert "diverge" in capsys.readouterr().out


def test_replay_by_states_refuses_a_nan_state(nan_recording):
    with pytest.raises(ValueError, match="state"):
        replay(nan_recording, mode="states")
