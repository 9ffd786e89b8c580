"""The `robosim` command as a user runs it (a real subprocess)."""
from __future__ import annotations

import os
import subprocess
import sys

import imageio.v3 as iio
import pytest

ROBOSIM = os.path.join(os.path.dirname(sys.executable), "robosim")


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([ROBOSIM, *args], capture_output=True, text=True, timeout=timeout)


def test_console_script_is_installed():
    assert os.access(ROBOSIM, os.X_OK), "pip install -e . should have created the robosim script"


def test_help_lists_every_subcommand():
    result = run("--help")
    assert result.returncode == 0
    for command in ("list", "demo", "bench", "eval", "replay"):
        assert f"    {command} " in result.stdout


@pytest.mark.parametrize("command", ["list", "demo", "bench", "eval", "replay"])
def test_subcommand_help(command):
    result = run(command, "--help")
    assert result.returncode == 0 and "usage: robosim " + command in result.stdout


def test_list_shows_tasks_and_modes():
    result = run("list")
    assert result.returncode == 0
    for word in ("PickCube-v1", "StackCube-v1", "pd_ee_delta_pose", "normalized_dense"):
        assert word in result.stdout


def test_demo_runs_and_reports_success_and_speed(tmp_path):
    video = tmp_path / "demo.mp4"
    result = run("demo", "--num-envs", "2", "--episodes", "2", "--seed", "3", "--video", str(video))
    assert result.returncode == 0, result.stderr
    assert "success rate: 100.0% (2/2 episodes)" in result.stdout
    assert "env-steps/s" in result.stdout
    frames = iio.imread(video)
    assert frames.ndim == 4 and frames.shape[0] > 10 and frames.shape[-1] == 3
    assert frames.std() > 5  # a rendered scene, not a blank frame


def test_demo_rejects_a_bad_task():
    result = run("demo", "--task", "Nope-v0", "--episodes", "1")
    assert result.returncode != 0
    assert "robosim demo: error: task_id must be one of" in result.stderr
    assert "Traceback" not in result.stderr
