"""The `robosim` command as a user runs it (a real subprocess)."""
from __future__ import annotations

import os
import subprocess
import sys

import imageio.v3 as iio
import pytest

from robosim.cli import main

ROBOSIM = os.path.join(os.path.dirname(sys.executable), "robosim")


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([ROBOSIM, *args], capture_output=True, text=True, timeout=timeout)


def test_console_script_is_installed():
    assert os.access(ROBOSIM, os.X_OK), "pip install -e . should have created the robosim script"


COMMANDS = ("list", "demo", "bench", "eval", "replay", "recover", "demos")
DEMOS_COMMANDS = ("generate", "convert", "render", "export", "import")


def test_help_lists_every_subcommand():
    result = run("--help")
    assert result.returncode == 0
    for command in COMMANDS:
        assert f"    {command} " in result.stdout
    demos = run("demos", "--help")
    assert demos.returncode == 0
    for command in DEMOS_COMMANDS:
        assert f"    {command} " in demos.stdout


@pytest.mark.parametrize("argv", [[c] for c in COMMANDS] + [["demos", c] for c in DEMOS_COMMANDS])
def test_subcommand_help(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and out.startswith("usage: robosim " + " ".join(argv))
    assert ("--import MODULE" in out) == (len(argv) == 1)   # a `demos` option, before its sub-command


@pytest.mark.parametrize("module", ["robosim", "robosim.cli"])
def test_python_dash_m_is_the_robosim_command(module):
    script = run("--help")
    as_module = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                               timeout=300)
    assert as_module.returncode == script.returncode == 0 and as_module.stdout == script.stdout


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
