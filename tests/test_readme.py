"""The README is a door: at most 200 lines, and every code block and command in it runs
(docs must not promise what the code does not do)."""
from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
README = os.path.join(ROOT, "README.md")
BIN = os.path.dirname(sys.executable)     # the venv's bin: what `.venv/bin/...` names
SETUP = "bash scripts/setup.sh && "


def readme() -> str:
    with open(README, encoding="utf-8") as f:
        return f.read()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", readme(), flags=re.S)


def commands() -> list[str]:
    """Every line of the README's bash blocks, comments stripped."""
    lines = [line.split("  #")[0].strip() for block in blocks("bash") for line in block.splitlines()]
    return [line for line in lines if line]


def argv(command: str) -> list[str]:
    """`.venv/bin/robosim eval ...` -> [<this venv's robosim>, "eval", ...]."""
    words = shlex.split(command)
    assert words[0].startswith(".venv/bin/"), f"README command {command!r} does not run from .venv/bin"
    return [os.path.join(BIN, words[0][len(".venv/bin/"):]), *words[1:]]


def test_readme_is_at_most_200_lines():
    assert readme().count("\n") <= 200


def test_readme_holds_only_commands_this_test_knows_how_to_run():
    for command in commands():
        assert command.startswith(SETUP) or command.startswith(".venv/bin/robosim "), (
            f"README command {command!r}: teach tests/test_readme.py to run it")


@pytest.mark.slow   # starts the main job's --help: ~12 s
def test_setup_commands_exist_and_parse():
    setup = [c for c in commands() if c.startswith(SETUP)]
    assert len(setup) == 2, "the README gives the two set-up commands: the main job and the tests"
    syntax = subprocess.run(["bash", "-n", os.path.join(ROOT, "scripts", "setup.sh")], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    tests = [c for c in setup if "pytest" in c]
    assert len(tests) == 1 and tests[0] in ci, "the README's test command must be what .ci/run runs, verbatim"
    main_job = argv([c for c in setup if "pytest" not in c][0][len(SETUP):])
    assert main_job[1:] == ["solve"]
    parsed = subprocess.run([*main_job, "--help"], capture_output=True, text=True, timeout=120)
    assert parsed.returncode == 0 and "usage: robosim solve" in parsed.stdout, parsed.stderr


def test_usage_snippet_runs(capsys):
    python = blocks("python")
    assert len(python) == 1, "the README has one python block, the usage snippet"
    namespace: dict = {}
    exec(compile(python[0], "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    obs, solved = namespace["obs"], namespace["solved"]
    assert obs.shape[0] == 16 and obs.ndim == 2 and solved.shape == (16,)
    assert solved.float().mean() >= 0.8      # docs/tasks.md: PickCube's scripted solution succeeds
    assert f"success rate {solved.float().mean():.0%}" in printed
    assert namespace["env"].sim is None      # closed


@pytest.mark.slow   # runs every README command: ~90 s
def test_robosim_commands_run_as_printed(tmp_path):
    ran = []
    for command in commands():
        if command.startswith(SETUP):
            continue
        extra = []
        if shlex.split(command)[1] == "view":   # it serves until stopped: a few steps, on a free port
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                extra = ["--max-steps", "5", "--time-scale", "0", "--port", str(s.getsockname()[1])]
        done = subprocess.run(argv(command) + extra, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        ran.append((shlex.split(command)[1], done.stdout))
    outputs = dict(ran)
    assert set(outputs) == {"list", "eval", "replay", "view"}, "a new README command needs its check here"
    views = [out for name, out in ran if name == "view"]
    assert len(views) == 3 and all("http://127.0.0.1:" in out for out in views), views
    assert "episodes)" in views[1]   # the --trajectory line plays eval.h5's episodes
    assert "PickCube-v1" in outputs["list"] and "pd_ee_delta_pose" in outputs["list"]
    assert re.search(r"success rate: +[\d.]+% \(\d/8\)", outputs["eval"]), outputs["eval"]
    assert (tmp_path / "eval.mp4").stat().st_size > 0 and (tmp_path / "eval.h5").stat().st_size > 0
    assert "replayed 8 episodes" in outputs["replay"] and "max abs state error 0 (exact)" in outputs["replay"]
