"""examples/ray_training_loop.py runs as the README shows it (2 workers, local Ray)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ray_training_loop.py")


def test_training_loop_example_runs_and_reports_its_iterations():
    env = {**os.environ, "RAY_worker_niceness": "0"}
    result = subprocess.run([sys.executable, EXAMPLE, "--workers", "2", "--num-envs", "4", "--iterations", "2",
                             "--horizon", "5", "--worker-cpus", "0.5"], capture_output=True, text=True, timeout=300,
                            env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("RayVecEnv(num_envs=4, workers=2, AutoresetMode.SAME_STEP): workers on nodes")
    assert [line.split(":")[0] for line in lines[1:]] == ["iteration 0", "iteration 1"]
    assert all("env-steps/s" in line and "mean reward" in line for line in lines[1:])
