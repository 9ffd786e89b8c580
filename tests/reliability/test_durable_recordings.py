"""`robosim eval --video --trajectory` under a full disk, a read-only or deleted
directory, and SIGKILL / SIGTERM / SIGINT at three moments of a run.

Every case: nothing under a final name fails to open, no segfault, and either every
finished episode is readable (after `robosim recover` for SIGKILL) or the process
printed one clear error line and exited non-zero. Real subprocesses, real signals, a
real full filesystem (a tiny tmpfs; mounting needs root, which CI has)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import imageio
import pytest

from robosim.record.trajectory import TrajectoryFile

pytestmark = pytest.mark.slow   # signals and kills of recording subprocesses: 20-275 s each

EPISODES, NUM_ENVS = 8, 2
EVAL = [sys.executable, "-m", "robosim.cli", "eval", "Reach-v1", "--policy", "robosim.record.policies:random",
        "--episodes", str(EPISODES), "--num-envs", str(NUM_ENVS), "--render-size", "32x32",
        "--video", "run.mp4", "--trajectory", "run.h5"]


def _parts(directory) -> list[str]:
    """Finished episode files in the run's parts directory (empty when there is none)."""
    for name in os.listdir(directory):
        if name.endswith(".parts"):
            try:
                return [n for n in os.listdir(os.path.join(directory, name)) if n.startswith("episode_")]
            except FileNotFoundError:
                return []
    return []


def _assert_final_files_open(directory) -> int:
    """Every final-named file opens; returns the trajectory's episode count (0 if none)."""
    episodes = 0
    if os.path.exists(os.path.join(directory, "run.h5")):
        traj = TrajectoryFile(os.path.join(directory, "run.h5"))
        episodes = len(traj)
        for k in range(episodes):
            traj.episode(k)                       # validates every field's shape
    if os.path.exists(os.path.join(directory, "run.mp4")):
        assert sum(1 for _ in imageio.get_reader(os.path.join(directory, "run.mp4"))) > 0
    return episodes


def _one_error_line(stderr: str, command: str = "eval") -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(f"robosim {command}: error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_full_disk_ends_with_one_error_line_and_no_broken_file(tmpfs):
    directory = tmpfs("size=96k")
    result = subprocess.run(EVAL, cwd=directory, capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])    # -11 would be a segfault
    assert "No space left on device" in _one_error_line(result.stderr)
    _assert_final_files_open(directory)
    assert not [n for n in os.listdir(directory) if n.endswith(".partial.mp4")]


def test_read_only_directory_is_refused_before_anything_runs(tmpfs):
    directory = tmpfs("ro,size=64k")
    result = subprocess.run(EVAL, cwd=directory, capture_output=True, text=True, timeout=600)
    assert result.returncode == 2
    assert "must be in a writable directory" in _one_error_line(result.stderr)


def test_directory_deleted_mid_run_exits_non_zero(tmp_path):
    """The run pauses with one episode on disk, so nothing writes while the directory is
    deleted; deleting `paused` with it lets the run go on into the missing directory."""
    directory = tmp_path / "out"
    directory.mkdir()
    child = subprocess.Popen(PAUSING, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=_pausing_env(1))
    _wait_for(lambda: (directory / "paused").exists(), child)
    assert len(_parts(directory)) >= 1
    shutil.rmtree(directory)
    out, err = child.communicate(timeout=600)
    assert child.returncode == 1, (child.returncode, err[-2000:])
    assert "No such file or directory" in _one_error_line(err)
    assert "trajectory:" not in out


def _wait_for(condition, child, timeout: float = 600.0) -> None:
    start = time.monotonic()
    while not condition():
        assert child.poll() is None, f"child ended early: {child.communicate()}"
        assert time.monotonic() - start < timeout
        time.sleep(0.05)


# moment -> finished episode files on disk when the run pauses for its signal
MOMENTS = {"before any episode ended": 0, "after the first episodes": 1, "near the end": EPISODES - 2}
PAUSING = [*EVAL[:EVAL.index("--policy") + 1], "pausing_policy:factory", *EVAL[EVAL.index("--policy") + 2:]]


def _pausing_env(episodes: int) -> dict:
    """Environment for a PAUSING run that pauses once `episodes` episode files are on disk."""
    return dict(os.environ, PAUSE_AFTER_EPISODES=str(episodes),
                PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))


def _start_and_signal(directory, sig: int) -> dict:
    """Start one eval per moment (in parallel: startup dominates). Each run's policy pauses
    once its moment is on disk (tests/reliability/pausing_policy.py) and is signalled there,
    so neither a fast nor a loaded machine changes what is tested.
    Returns moment -> (directory, child, finished episodes on disk when signalled)."""
    runs = {}
    for k, (moment, need) in enumerate(MOMENTS.items()):
        d = directory / f"m{k}"
        d.mkdir()
        runs[moment] = (d, subprocess.Popen(PAUSING, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True, env=_pausing_env(need)))
    seen, pending = {}, dict(runs)
    while pending:
        for moment, (d, child) in list(pending.items()):
            if (d / "paused").exists():
                seen[moment] = len(_parts(d))
                assert seen[moment] >= MOMENTS[moment], (moment, seen[moment])
                child.send_signal(sig)
                del pending[moment]
            else:
                assert child.poll() is None, f"child ended before {moment!r}: {child.communicate()}"
        time.sleep(0.05)
    return {m: (d, child, seen[m]) for m, (d, child) in runs.items()}


def test_sigkill_at_three_moments_every_finished_episode_is_recoverable(tmp_path):
    for moment, (d, child, finished) in _start_and_signal(tmp_path, signal.SIGKILL).items():
        child.communicate(timeout=600)
        assert child.returncode == -signal.SIGKILL
        assert not (d / "run.h5").exists()
        if moment == "after the first episodes":   # a later run in the same place points to the leftovers
            later = subprocess.run(EVAL[:5] + ["--episodes", "1", "--trajectory", "later.h5"], cwd=d,
                                   capture_output=True, text=True, timeout=600)
            assert later.returncode == 0 and f"robosim recover {d}" in later.stderr, later.stderr
        result = subprocess.run([sys.executable, "-m", "robosim.cli", "recover", str(d)], capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        assert _assert_final_files_open(d) >= finished, (moment, result.stdout)
        assert not [n for n in os.listdir(d) if n.endswith(".parts")]


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_sigint_at_three_moments_close_the_files(tmp_path, sig, status):
    for moment, (d, child, finished) in _start_and_signal(tmp_path, sig).items():
        _, err = child.communicate(timeout=600)
        assert child.returncode == status, (moment, child.returncode, err[-2000:])
        assert f"interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err, err[-2000:]
        assert _assert_final_files_open(d) >= finished, moment
        if finished or (d / "run.h5").exists():
            assert (d / "run.h5").exists() and (d / "run.mp4").exists(), moment
        assert not [n for n in os.listdir(d) if n.startswith(".")], moment        # no leftovers
