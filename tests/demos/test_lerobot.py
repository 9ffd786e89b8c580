"""LeRobot v3.0 export and import (robosim.demos.lerobot), checked against the published
layout with pyarrow, pandas and ffmpeg (lerobot itself cannot be installed next to
robosim's torch: docs/imitation.md). Reuses the session's 3 PickCube demos (conftest)."""
from __future__ import annotations

import json
import os
import shutil

import imageio_ffmpeg
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch

from robosim.cli import main as robosim_main
from robosim.demos.lerobot import export_lerobot, import_lerobot
from robosim.envs import make_env
from robosim.record.replay import replay
from robosim.record.trajectory import TrajectoryFile

CAMERA = "observation.images.base_camera"


@pytest.fixture(scope="module")
def exported(demos, tmp_path_factory):
    """(demos path, dataset dir, summary) of the demos exported with videos."""
    path = demos[0]
    out = str(tmp_path_factory.mktemp("lerobot") / "pick_dataset")
    return path, out, export_lerobot(path, out, progress=False)


def _source(path: str) -> list:
    traj = TrajectoryFile(path)
    return [traj.episode(k) for k in range(len(traj))]


def test_export_writes_the_v3_layout(exported):
    path, out, summary = exported
    episodes = _source(path)
    lengths = [e.length for e in episodes]
    info = json.load(open(os.path.join(out, "meta/info.json")))
    assert info["codebase_version"] == "v3.0" and info["fps"] == 20 and info["robot_type"] == "panda"
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"]) == (3, sum(lengths), 1)
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    features = info["features"]
    assert features["action"]["shape"] == [7] and features["observation.state"]["shape"] == [9]
    assert features["observation.environment_state"]["shape"] == [57]
    assert features[CAMERA]["dtype"] == "video" and features[CAMERA]["shape"] == [128, 128, 3]
    assert features["observation.state"]["names"][0] == "panda_joint1"
    assert info["robosim"]["task_id"] == "PickCube-v1" and summary["videos"] == [CAMERA]

    data = pq.read_table(os.path.join(out, "data/chunk-000/file-000.parquet")).to_pandas()
    assert len(data) == sum(lengths) and data["index"].tolist() == list(range(sum(lengths)))
    first = np.stack(data["action"][data["episode_index"] == 1])
    np.testing.assert_array_equal(first, episodes[1].actions)
    np.testing.assert_array_equal(np.stack(data["observation.environment_state"][:lengths[0]]), episodes[0].states[:-1])
    assert data["timestamp"][data["episode_index"] == 2].tolist() == pytest.approx(np.arange(lengths[2]) / 20)
    assert data["next.success"][data["episode_index"] == 0].tolist() == episodes[0].success.tolist()

    rows = pq.read_table(os.path.join(out, "meta/episodes/chunk-000/file-000.parquet")).to_pandas()
    starts = np.concatenate([[0], np.cumsum(lengths)])
    assert rows["length"].tolist() == lengths and rows["dataset_from_index"].tolist() == starts[:-1].tolist()
    assert rows[f"videos/{CAMERA}/from_timestamp"].tolist() == pytest.approx(starts[:-1] / 20)
    assert rows["robosim/seed"].tolist() == [e.seed for e in episodes]
    tasks = pd.read_parquet(os.path.join(out, "meta/tasks.parquet"))
    assert tasks.loc[rows["tasks"][0][0], "task_index"] == 0
    assert tasks.index.tolist() == ["Pick up the cube and hold it at the goal position."]   # an instruction

    stats = json.load(open(os.path.join(out, "meta/stats.json")))
    actions = np.concatenate([e.actions for e in episodes]).astype(np.float64)
    np.testing.assert_allclose(stats["action"]["min"], actions.min(0))
    np.testing.assert_allclose(stats["action"]["q50"], np.quantile(actions, 0.5, axis=0))
    assert stats["action"]["count"] == [sum(lengths)]
    assert np.asarray(stats[CAMERA]["mean"]).shape == (3, 1, 1)


def test_export_videos_hold_the_recorded_states(exported):
    """Frame 5 of episode 1 in the mp4 is the render of that recorded state (H.264 loss aside)."""
    path, out, _ = exported
    episodes = _source(path)
    reader = imageio_ffmpeg.read_frames(os.path.join(out, f"videos/{CAMERA}/chunk-000/file-000.mp4"))
    meta = next(reader)
    frames = [np.frombuffer(f, np.uint8).reshape(128, 128, 3) for f in reader]
    assert meta["size"] == (128, 128) and len(frames) == sum(e.length for e in episodes)
    traj = TrajectoryFile(path)
    env = make_env(traj.spec, num_envs=traj.num_envs, obs_mode="rgb")
    try:
        e = episodes[1]
        env.reset(seed=[e.seed], options={"env_idx": torch.tensor([e.env_index])})
        env.set_state(torch.from_numpy(e.states[5:6]), env_idx=torch.tensor([e.env_index]))
        expected = env.cameras.sensors.capture(("rgb",))["base_camera"]["rgb"][e.env_index].numpy()
    finally:
        env.close()
    decoded = frames[episodes[0].length + 5].astype(float)
    assert np.abs(decoded - expected).mean() < 4.0
    assert np.abs(decoded - frames[episodes[0].length + 15]).mean() > 0.5   # the robot moved


def test_round_trip_resimulates_every_episode(exported, tmp_path):
    """Import the dataset, re-simulate its actions from each episode's seed (separate
    physics): every state is reproduced bit for bit and every episode ends in success."""
    path, out, _ = exported
    back = str(tmp_path / "back.h5")
    summary = import_lerobot(out, back, progress=False)
    assert summary["episodes"] == 3 and summary["task_id"] == "PickCube-v1"
    for a, b in zip(_source(path), _source(back)):
        for field in ("states", "actions", "rewards", "success", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert (a.seed, a.env_index) == (b.seed, b.env_index)
    report = replay(back, mode="actions")
    assert report.exact and report.episodes == 3
    assert all(e.success[-1] for e in _source(back))


def _strip_robosim(out: str, dest: str, action_shape: list[int] | None = None) -> str:
    """A copy of the dataset as another writer would leave it: no robosim entries."""
    shutil.copytree(out, dest)
    info_path = os.path.join(dest, "meta/info.json")
    info = json.load(open(info_path))
    del info["robosim"]
    if action_shape is not None:
        info["features"]["action"]["shape"] = action_shape
    json.dump(info, open(info_path, "w"))
    episodes = os.path.join(dest, "meta/episodes/chunk-000/file-000.parquet")
    table = pq.read_table(episodes)
    pq.write_table(table.drop([c for c in table.column_names if c.startswith("robosim/")]), episodes)
    return dest


def test_import_of_a_dataset_written_elsewhere_for_the_same_task(exported, tmp_path):
    path, out, _ = exported
    foreign = _strip_robosim(out, str(tmp_path / "foreign"))
    with pytest.raises(ValueError, match="task must be given"):
        import_lerobot(foreign, str(tmp_path / "x.h5"), progress=False)
    with pytest.raises(ValueError, match="robot must be the dataset's robot_type 'panda'"):
        import_lerobot(foreign, str(tmp_path / "x.h5"), task="PickCube-v1", robot="xarm7", progress=False)
    assert not os.path.exists(tmp_path / "x.h5")
    back = str(tmp_path / "foreign.h5")
    summary = import_lerobot(foreign, back, task="PickCube-v1", progress=False)
    assert summary["resimulated"] and summary["max_deviation"] == 0.0
    for a, b in zip(_source(path), _source(back)):   # every state, the last one included
        for field in ("states", "actions", "rewards", "success", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert b.seed == -1 and b.env_index == 0
    report = replay(back, mode="actions")   # from the first state, as `robosim replay --strict` runs it
    assert report.exact and report.episodes == 3


def test_bad_inputs_are_refused_before_writing(exported, tmp_path):
    path, out, _ = exported
    not_h5 = tmp_path / "notes.h5"
    not_h5.write_text("not a trajectory")
    with pytest.raises(ValueError, match="trajectory must be an HDF5 file written by robosim"):
        export_lerobot(str(not_h5), str(tmp_path / "a"), progress=False)
    with pytest.raises(ValueError, match="out_dir must not exist yet"):
        export_lerobot(path, out, progress=False)
    with pytest.raises(ValueError, match="dataset_dir must be a LeRobot dataset"):
        import_lerobot(str(tmp_path), str(tmp_path / "b.h5"), progress=False)
    old = _strip_robosim(out, str(tmp_path / "old"))
    info = json.load(open(os.path.join(old, "meta/info.json")))
    json.dump({**info, "codebase_version": "v2.1"}, open(os.path.join(old, "meta/info.json"), "w"))
    with pytest.raises(ValueError, match="LeRobot v3.0 dataset, got codebase_version 'v2.1'"):
        import_lerobot(old, str(tmp_path / "b.h5"), progress=False)
    with pytest.raises(ValueError, match="task must be the dataset's task 'PickCube-v1'.*StackCube-v1"):
        import_lerobot(out, str(tmp_path / "b.h5"), task="StackCube-v1", progress=False)
    with pytest.raises(ValueError, match="robot must be the dataset's robot 'panda', got 'so100'"):
        import_lerobot(out, str(tmp_path / "b.h5"), robot="so100", progress=False)
    wide = _strip_robosim(out, str(tmp_path / "wide"), action_shape=[8])
    with pytest.raises(ValueError, match="feature 'action' must have shape \\[7\\].*got \\[8\\]"):
        import_lerobot(wide, str(tmp_path / "b.h5"), task="PickCube-v1", progress=False)
    assert not os.path.exists(tmp_path / "a") and not os.path.exists(tmp_path / "b.h5")
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


def test_cli_export_and_import(demos, tmp_path, capsys):
    dataset, back = str(tmp_path / "ds"), str(tmp_path / "back.h5")
    assert robosim_main(["demos", "export", demos[0], "--format", "lerobot", "--out", dataset, "--no-video"]) == 0
    assert not os.path.exists(os.path.join(dataset, "videos"))
    assert robosim_main(["demos", "import", dataset, "--out", back]) == 0
    assert "3 episodes" in capsys.readouterr().out and len(TrajectoryFile(back)) == 3
    assert robosim_main(["demos", "export", demos[0], "--format", "lerobot", "--out", dataset]) == 2
    assert "out_dir must not exist yet" in capsys.readouterr().err
