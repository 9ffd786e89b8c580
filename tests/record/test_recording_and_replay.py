"""A recorded run holds what happened, replays to the same states, and survives a crash."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import h5py
import imageio
import numpy as np
import pytest
import torch

import robosim
from robosim.record import RecordEpisode, TrajectoryFile, replay

SIZE = (64, 48)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """2 envs of PickCube, scripted policy, 12 steps with a partial reset of env 1 at step 5."""
    out = tmp_path_factory.mktemp("rec")
    env = robosim.make("PickCube-v1", num_envs=2, render_mode="rgb_array", render_size=SIZE)
    log = {"rewards": [], "states": [], "steps": 12}
    with RecordEpisode(env, video=str(out / "run.mp4"), trajectory=str(out / "run.h5")) as rec:
        policy = env.task.solution_policy()
        rec.reset(seed=7)
        log["states"].append(env.get_state().clone())
        for t in range(log["steps"]):
            _, reward, *_ = rec.step(policy())
            log["rewards"].append(reward.clone())
            log["states"].append(env.get_state().clone())
            if t == 4:
                rec.reset(seed=[50], options={"env_idx": torch.tensor([1])})
                log["reset_state"] = env.get_state().clone()
    return out, log


def test_trajectory_file_holds_the_run(recorded):
    out, log = recorded
    traj = TrajectoryFile(str(out / "run.h5"), task_id="PickCube-v1")
    assert traj.spec.control_mode == "pd_ee_delta_pose" and traj.attrs["num_envs"] == 2
    episodes = [traj.episode(k) for k in range(len(traj))]
    # env 1's first episode ended at its partial reset; the running ones were cut at close
    assert [(e.env_index, e.seed, e.length, e.complete) for e in episodes] == [
        (1, 8, 5, False), (0, 7, 12, False), (1, 50, 7, False)]
    first, whole, second = episodes
    states = torch.stack(log["states"]).numpy()                    # (13, 2, S)
    rewards = torch.stack(log["rewards"]).numpy()                  # (12, 2)
    assert np.array_equal(whole.states, states[:, 0])
    assert np.array_equal(whole.rewards, rewards[:, 0])
    assert np.array_equal(first.states, states[:6, 1])
    assert np.array_equal(second.states[0], log["reset_state"][1].numpy())
    assert np.array_equal(second.states[1:], states[6:, 1])
    assert whole.actions.shape == (12, 7) and whole.actions.dtype == np.float32


def test_video_has_one_tiled_frame_per_reset_and_step(recorded):
    out, log = recorded
    frames = [f for f in imageio.get_reader(str(out / "run.mp4"))]
    assert len(frames) == 1 + log["steps"] + 1                     # reset, steps, partial reset
    w, h = SIZE
    assert frames[0].shape == (h, 2 * w + 2, 3)                    # 2 envs side by side
    assert frames[0][2:8, 4:30].mean() < 90                        # overlay box on each tile
    assert frames[0][2:8, w + 6:w + 30].mean() < 90


def test_replay_restores_the_recorded_states_exactly(recorded, tmp_path):
    out, _ = recorded
    report = replay(str(out / "run.h5"), video=str(tmp_path / "replay.mp4"), render_size=SIZE)
    assert report.episodes == 3 and report.steps == 24
    assert report.exact, report.summary()
    assert report.first_divergence == [-1, -1, -1]
    assert "exact" in report.summary()
    # the recording's schedule: env 1's second episode starts when its first ends (a
    # partial reset with its own frame), beside env 0's 12 steps: reset, 12 steps, reset
    frames = sum(1 for _ in imageio.get_reader(str(tmp_path / "replay.mp4")))
    assert frames == 1 + 12 + 1


def test_replay_reports_divergence_when_the_record_is_altered(recorded, tmp_path):
    out, _ = recorded
    path = tmp_path / "altered.h5"
    shutil.copy(out / "run.h5", path)
    with h5py.File(path, "r+") as f:
        f["episode_00001/actions"][6, 0] += 0.5                    # env 0, step 7
    report = replay(str(path))
    assert report.first_divergence[1] == 7 and report.max_abs_error[1] > 1e-4
    assert report.first_divergence[0] == -1
    assert "first differs at step 7" in report.summary()


@pytest.mark.parametrize("attr, value, message", [
    ("task_id", "PushCube-v1", "must be recorded on task 'PickCube-v1', got 'PushCube-v1'"),
    ("format_version", 99, "must have format_version 1, got 99"),
    ("format", "something-else", "must be a 'robosim-trajectory' file"),
])
def test_trajectories_of_another_task_or_version_are_refused_before_simulating(
        recorded, tmp_path, monkeypatch, attr, value, message):
    out, _ = recorded
    path = tmp_path / "other.h5"
    shutil.copy(out / "run.h5", path)
    with h5py.File(path, "r+") as f:
        f.attrs[attr] = value
    monkeypatch.setattr(robosim, "make", lambda *a, **k: pytest.fail("an env was built"))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        replay(str(path), video=str(tmp_path / "never.mp4"), task_id="PickCube-v1")
    assert not (tmp_path / "never.mp4").exists()
    with pytest.raises(ValueError, match="must be an existing HDF5 file"):
        replay(str(tmp_path / "missing.h5"))


def test_state_dim_of_another_version_is_refused(recorded, tmp_path):
    out, _ = recorded
    path = tmp_path / "old.h5"
    shutil.copy(out / "run.h5", path)
    with h5py.File(path, "r+") as f:
        f.attrs["state_dim"] = 12
    wrong_dim = r"state_dim must match PickCube-v1's state_dim .*, got 12|states must have shape \(\d+, 12\)"
    with pytest.raises(ValueError, match=wrong_dim):
        replay(str(path), video=str(tmp_path / "never.mp4"))
    assert not (tmp_path / "never.mp4").exists() and not [p for p in os.listdir(tmp_path) if "partial" in p]


def test_recording_wrapper_rejects_bad_input(tmp_path):
    env = robosim.make("Reach-v1", num_envs=1)
    try:
        with pytest.raises(ValueError, match="video needs an env made with render_mode"):
            RecordEpisode(env, video=str(tmp_path / "v.mp4"))
        with pytest.raises(ValueError, match="trajectory must end with .h5"):
            RecordEpisode(env, trajectory=str(tmp_path / "t.txt"))
        assert os.listdir(tmp_path) == []
    finally:
        env.close()


CRASHING_SCRIPT = """
import torch, robosim
from robosim.record import RecordEpisode
env = robosim.make("PickCube-v1", num_envs=2, render_mode="rgb_array", render_size=(32, 32))
rec = RecordEpisode(env, video={video!r}, trajectory={traj!r})   # no `with`, no close()
rec.reset(seed=0)
for t in range(6):
    rec.step(torch.zeros(2, 7))
raise RuntimeError("crash mid-episode")
"""


def test_an_uncaught_exception_mid_episode_leaves_valid_files(tmp_path):
    video, traj = str(tmp_path / "crash.mp4"), str(tmp_path / "crash.h5")
    script = textwrap.dedent(CRASHING_SCRIPT).format(video=video, traj=traj)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "crash mid-episode" in result.stderr
    assert sum(1 for _ in imageio.get_reader(video)) == 7          # reset + 6 steps
    episodes = [TrajectoryFile(traj).episode(k) for k in range(2)]
    assert [(e.length, e.complete) for e in episodes] == [(6, False), (6, False)]
    assert not [p for p in os.listdir(tmp_path) if "partial" in p]


def test_close_can_leave_the_env_open_for_the_next_clip(tmp_path):
    """close(close_env=False) finishes the files and keeps the env usable (training loops
    that record a clip every K iterations reuse one rendering env)."""
    env = robosim.make("PickCube-v1", num_envs=1, render_mode="rgb_array", render_size=SIZE)
    try:
        for k in range(2):
            rec = RecordEpisode(env, video=str(tmp_path / f"clip{k}.mp4"))
            rec.reset(seed=k)
            rec.step(None)
            rec.close(close_env=False)
            frames = [f for f in imageio.get_reader(str(tmp_path / f"clip{k}.mp4"))]
            assert len(frames) == 2                       # reset + step
        env.step(None)                                    # still open
    finally:
        env.close()
