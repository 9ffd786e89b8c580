"""The `robosim` command as a user runs it (a real subprocess)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap

import h5py
import imageio.v3 as iio
import pytest

from robosim.cli import build_parser, main

ROBOSIM = os.path.join(os.path.dirname(sys.executable), "robosim")


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([ROBOSIM, *args], capture_output=True, text=True, timeout=timeout)


def test_console_script_is_installed():
    assert os.access(ROBOSIM, os.X_OK), "pip install -e . should have created the robosim script"


COMMANDS = ("list", "solve", "demo", "bench", "eval", "replay", "recover", "demos")
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
    assert "--import MODULE" in out   # every command and sub-command takes it in its own position


def parsers(parser: argparse.ArgumentParser, path=()):
    """(command path, parser) for `robosim` and every command and sub-command below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from parsers(child, (*path, name))


def test_every_parser_takes_repeated_import_and_main_joins_them():
    found = {path: p for path, p in parsers(build_parser())}
    assert set(found) >= {(), *((c,) for c in COMMANDS), *(("demos", c) for c in DEMOS_COMMANDS)}
    for path, p in found.items():
        assert "--import" in p._option_string_actions, path
    from robosim.cli.options import imported_modules

    args = build_parser().parse_args(["--import", "a", "demos", "--import", "b", "generate", "--import", "c", "T",
                                      "-n", "1", "--out", "x.h5", "--import", "d"])
    assert imported_modules(args) == ["a", "b", "c", "d"]


USER_TASKS = textwrap.dedent('''
    import robosim
    from robosim_tasks.reach import ReachTask
    from robosim_tasks.scripted import PhasePolicy  # noqa: F401  (a robosim 0.1.0 path: warns)


    @robosim.register_task("MyReach-v1")
    class MyReach(ReachTask):
        """Reach, registered under the user's own id."""
''')


def test_demos_generate_takes_import_after_its_subcommand(tmp_path):
    (tmp_path / "mytasks.py").write_text(USER_TASKS)
    out = tmp_path / "x.h5"
    base = ["demos", "generate", "MyReach-v1", "-n", "1", "--num-envs", "1", "--out", str(out)]
    missing = subprocess.run([ROBOSIM, *base], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert missing.returncode == 2 and "'MyReach-v1'" in missing.stderr and "--import" in missing.stderr
    result = subprocess.run([ROBOSIM, *base[:2], "--import", "mytasks", *base[2:]], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "kept 1 of 1 demos" in result.stdout
    with h5py.File(out, "r") as h5:
        assert h5.attrs["task_id"] == "MyReach-v1"
    # the user's module imported a moved name: the command shows the DeprecationWarning
    assert "robosim_tasks.scripted.PhasePolicy moved to robosim.envs.solutions.PhasePolicy" in result.stderr


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


def test_solve_runs_and_reports_success_and_speed(tmp_path):
    video = tmp_path / "demo.mp4"
    result = run("solve", "--num-envs", "2", "--episodes", "2", "--seed", "3", "--video", str(video))
    assert result.returncode == 0, result.stderr
    assert "success rate: 100.0% (2/2 episodes)" in result.stdout
    assert "env-steps/s" in result.stdout
    frames = iio.imread(video)
    assert frames.ndim == 4 and frames.shape[0] > 10 and frames.shape[-1] == 3
    assert frames.std() > 5  # a rendered scene, not a blank frame


def test_solve_rejects_a_bad_task():
    result = run("solve", "--task", "Nope-v0", "--episodes", "1")
    assert result.returncode != 0
    assert "robosim solve: error: task_id must be one of" in result.stderr
    assert "Traceback" not in result.stderr and "deprecated" not in result.stderr


def test_demo_is_the_deprecated_name_of_solve():
    result = run("demo", "--task", "Nope-v0", "--episodes", "1")   # reaches solve's own task check
    assert result.returncode == 2
    warning, error = result.stderr.strip().splitlines()
    assert warning.startswith("robosim demo: warning: `robosim demo` is now `robosim solve`") and "0.3.0" in warning
    assert error.startswith("robosim demo: error: task_id must be one of")


def test_main_called_from_python_gives_back_the_callers_sigterm_handler():
    """main installs its own SIGTERM handler while it runs; once it returns, every SIGTERM
    reaches the caller's handler again (it used to keep main's, which raised on the first
    and ignored the rest)."""
    script = textwrap.dedent("""
        import os, signal
        from robosim.cli import main
        got = []
        signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
        assert main(["list"]) == 0
        for _ in range(3):
            os.kill(os.getpid(), signal.SIGTERM)
        print("TERMS", len(got))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "TERMS 3"
