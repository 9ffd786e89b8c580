"""Two writers to the same output path: the second is refused at start with a
ValueError naming the path, instead of both reporting success while the later rename
silently replaces the earlier recording. A killed writer's claim dies with it.

Real processes: a `robosim eval` that pauses itself (pausing_policy.py) holding its
video and trajectory, and second `robosim eval` runs against the same paths while it
provably holds them; no timing decides the outcome."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from robosim.record.trajectory import TrajectoryFile, TrajectoryWriter
from robosim.record.video import VideoWriter

pytestmark = pytest.mark.slow   # competing recording subprocesses: 8-97 s each

EVAL = [sys.executable, "-m", "robosim.cli", "eval", "Reach-v1", "--episodes", "8", "--num-envs", "2",
        "--render-size", "32x32"]
HEADER = {"task_id": "Reach-v1", "env_kwargs": {}, "num_envs": 1, "state_dim": 3, "action_dim": 2}


def _paused_writer(directory) -> subprocess.Popen:
    """An eval writing run.mp4 and run.h5 in `directory`, paused after its first finished
    episode (it has written `paused`), holding both paths."""
    env = dict(os.environ, PAUSE_AFTER_EPISODES="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    child = subprocess.Popen(EVAL + ["--policy", "pausing_policy:factory", "--video", "run.mp4",
                                     "--trajectory", "run.h5"],
                             cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    while not (directory / "paused").exists():
        assert child.poll() is None, f"writer ended before pausing: {child.communicate()}"
        time.sleep(0.05)
    return child


def test_a_second_process_writing_the_same_paths_is_refused_and_the_first_recording_kept(tmp_path):
    first = _paused_writer(tmp_path)
    try:
        paths = {"video": str(tmp_path / "run.mp4"), "trajectory": str(tmp_path / "run.h5")}
        seconds = {out: subprocess.Popen(EVAL + ["--policy", "robosim.record.policies:random", f"--{out}", path],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for out, path in paths.items()}
        for out, second in seconds.items():
            _, err = second.communicate(timeout=600)
            assert second.returncode == 2, (out, second.returncode, err[-2000:])
            lines = [line for line in err.splitlines() if line.startswith("robosim eval: error:")]
            assert len(lines) == 1 and "Traceback" not in err, err
            assert f"{out} must be a path no other writer is recording to, got {paths[out]!r}" in lines[0], lines[0]
            assert f"process {first.pid} is recording to it" in lines[0], lines[0]
    finally:
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=600)
    assert first.returncode == 143, err[-2000:]
    traj = TrajectoryFile(str(tmp_path / "run.h5"))
    assert len(traj) >= 1 and all(traj.episode(k).length > 0 for k in range(len(traj)))
    assert (tmp_path / "run.mp4").stat().st_size > 0
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]     # no lock or partial left


def test_two_writers_in_one_process_the_second_is_refused(tmp_path):
    video_path, traj_path = str(tmp_path / "v.mp4"), str(tmp_path / "t.h5")
    video, traj = VideoWriter(video_path), TrajectoryWriter(traj_path, HEADER)
    with pytest.raises(ValueError, match=r"video must be a path no other writer is recording to, got "
                                         r"'.*v\.mp4' \(this process is recording to it"):
        VideoWriter(video_path)
    with pytest.raises(ValueError, match=r"trajectory must be a path no other writer is recording to"):
        TrajectoryWriter(traj_path, HEADER)
    video.add_frame(np.zeros((8, 8, 3), np.uint8))
    video.close()
    traj.close()
    assert sorted(os.listdir(tmp_path)) == ["t.h5", "v.mp4"]
    again, gone = VideoWriter(video_path), TrajectoryWriter(traj_path, HEADER)   # free once finished
    again.discard()
    gone.discard()
    assert sorted(os.listdir(tmp_path)) == ["t.h5", "v.mp4"]


def test_a_killed_writer_does_not_block_its_path(tmp_path):
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os, signal
        from robosim.record.trajectory import TrajectoryWriter
        from robosim.record.video import VideoWriter
        v = VideoWriter("v.mp4")
        t = TrajectoryWriter("t.h5", {"task_id": "Reach-v1", "env_kwargs": {}, "num_envs": 1,
                                      "state_dim": 3, "action_dim": 2})
        os.kill(os.getpid(), signal.SIGKILL)
    """)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (tmp_path / ".v.mp4.lock").exists() and (tmp_path / ".t.h5.lock").exists()
    video, traj = VideoWriter(str(tmp_path / "v.mp4")), TrajectoryWriter(str(tmp_path / "t.h5"), HEADER)
    video.add_frame(np.zeros((8, 8, 3), np.uint8))
    video.close()
    traj.close()
    assert (tmp_path / "v.mp4").exists() and len(TrajectoryFile(str(tmp_path / "t.h5"))) == 0
    assert not (tmp_path / ".v.mp4.lock").exists() and not (tmp_path / ".t.h5.lock").exists()
