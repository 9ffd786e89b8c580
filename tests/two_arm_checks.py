"""Checks shared by the two-arm task tests: a short scripted recording in separate
isolation, and a LeRobot export that names each arm's actions and joints."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import robosim
from robosim.record.wrapper import RecordEpisode


def record_scripted(path: str, task_id: str, steps: int) -> str:
    """Record `steps` scripted steps of 2 envs of `task_id` (separate isolation, seeds
    11 and 12) to `path`; returns `path`."""
    env = RecordEpisode(robosim.make(task_id, num_envs=2, physics_isolation="separate", seed=1), trajectory=path)
    env.reset(seed=[11, 12])
    policy = env.task.solution_policy()
    for _ in range(steps):
        env.step(policy())
    env.close()
    return path


def assert_export_names_both_arms(recording: str, out: str, robot_type: str, action_per_arm: int,
                                  state_per_arm: int, first_joint: str) -> None:
    """export_lerobot(recording) -> `out` has one action/state column per arm, named,
    equal to the recorded actions and to the slices of the whole state, and the two arms'
    joints differ."""
    pq = pytest.importorskip("pyarrow.parquet")
    from robosim.demos.lerobot import export_lerobot
    from robosim.record.trajectory import TrajectoryFile

    export_lerobot(recording, out, video=False, progress=False)
    info = json.load(open(os.path.join(out, "meta/info.json")))
    features = info["features"]
    assert info["robot_type"] == robot_type
    assert features["action"]["shape"] == [2 * action_per_arm]
    assert features["observation.state"]["shape"] == [2 * state_per_arm]
    assert features["action.left"]["shape"] == [action_per_arm] == features["action.right"]["shape"]
    assert features["observation.state.left"]["names"][0] == first_joint
    assert features["observation.state"]["names"][state_per_arm] == f"right.{first_joint}"
    data = pq.read_table(os.path.join(out, "data/chunk-000/file-000.parquet")).to_pandas()
    episode = TrajectoryFile(recording).episode(0)
    first = data["episode_index"] == 0
    np.testing.assert_array_equal(np.stack(data["action.left"][first]), episode.actions[:, :action_per_arm])
    np.testing.assert_array_equal(np.stack(data["action.right"][first]), episode.actions[:, action_per_arm:])
    right = np.stack(data["observation.state.right"][first])
    np.testing.assert_array_equal(right, np.stack(data["observation.state"][first])[:, state_per_arm:])
    assert not np.array_equal(right, np.stack(data["observation.state.left"][first]))
