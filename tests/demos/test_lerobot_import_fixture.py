"""A dataset written by LeRobot's own writer imports and replays exactly (issue 32 item 3).

tests/demos/fixtures/lerobot_pickcube was written once by lerobot 0.4.4's
LeRobotDataset.create / add_frame / save_episode / finalize (scripts/make_lerobot_fixture.py,
run in a separate venv: lerobot is not a robosim dependency): 2 scripted PickCube-v1
episodes of 12 steps on panda, features observation.environment_state, action,
next.reward, next.success, no robosim entry and no final state. The expected values are
read from the fixture's parquet with pyarrow, not through robosim's reader.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from robosim.demos.lerobot import import_lerobot
from robosim.record.replay import replay
from robosim.record.trajectory import TrajectoryFile

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "lerobot_pickcube")


def _frames() -> dict[str, np.ndarray]:
    table = pq.read_table(os.path.join(FIXTURE, "data", "chunk-000", "file-000.parquet"))
    return {name: np.asarray(table.column(name).to_pylist()) for name in table.column_names}


def test_the_fixture_is_lerobots_own_output():
    info = json.load(open(os.path.join(FIXTURE, "meta", "info.json")))
    assert info["codebase_version"] == "v3.0" and "robosim" not in info
    assert info["total_episodes"] == 2 and info["total_frames"] == 24 and info["robot_type"] == "panda"
    episodes = pq.read_table(os.path.join(FIXTURE, "meta", "episodes", "chunk-000", "file-000.parquet"))
    assert not [c for c in episodes.column_names if c.startswith("robosim/")]


@pytest.mark.parametrize("mode", ["actions", "states"])
def test_lerobot_written_dataset_imports_and_replays_exactly(tmp_path, mode):
    out = str(tmp_path / "imported.h5")
    summary = import_lerobot(FIXTURE, out, task="PickCube-v1", progress=False)
    assert summary["resimulated"] and summary["skipped"] == []
    assert summary["episodes"] == 2 and summary["frames"] == 24
    assert summary["max_deviation"] == 0.0   # LeRobot's float32 columns are robosim's states bit for bit

    frames = _frames()
    traj = TrajectoryFile(out)
    for k in range(2):
        rows = frames["episode_index"] == k
        e = traj.episode(k)
        assert e.states.shape == (13, 57) and e.seed == -1 and e.complete
        np.testing.assert_array_equal(e.states[:-1], frames["observation.environment_state"][rows])
        np.testing.assert_array_equal(e.actions, frames["action"][rows])
        np.testing.assert_array_equal(e.rewards, frames["next.reward"][rows].reshape(-1))
        np.testing.assert_array_equal(e.success, frames["next.success"][rows].reshape(-1))
        assert np.isfinite(e.states[-1]).all() and not np.array_equal(e.states[-1], e.states[-2])
    # every state, the last (re-simulated, not in the dataset) included, comes back exactly
    report = replay(out, mode=mode)
    assert report.exact, report.summary()
