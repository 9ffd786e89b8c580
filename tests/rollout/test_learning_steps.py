"""A step-count learning test: the built-in PPO (examples/ppo.py) learns Reach-v1 to >= 90%
evaluation success within a fixed number of env steps. Seed 0 and one torch thread make
the run the same on every machine, so the test asserts env steps, never wall time. It
runs the example as a user would (its own process, so the thread setting and global RNG
state of other tests cannot touch it) and reads the run log it writes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow   # a PPO training run: ~40 s

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

# Measured with this command (seed 0, 32 envs, evaluation every 2,048 env steps on 32
# seeded episodes): the first evaluation at >= 0.9 came at 14,336 env steps, identical
# over repeated runs (16,384 before dict observations flattened in their own key order).
# The bound is that count x 1.5 (rounded down to whole rollouts of 32 envs x 16 steps =
# 512 env steps), so a harmless numeric change that moves learning by a few evaluations
# passes, while a learner or env that stops learning fails.
MEASURED_ENV_STEPS = 14_336
BOUND_ENV_STEPS = MEASURED_ENV_STEPS * 3 // 2 // 512 * 512   # 21,504
LEVEL = 0.9


def test_ppo_reaches_90_percent_on_reach_within_the_step_bound(tmp_path):
    out = tmp_path / "ppo_reach"
    command = [sys.executable, "examples/ppo.py", "--task", "Reach-v1", "--num-envs", "32",
               "--total-steps", str(BOUND_ENV_STEPS), "--eval-every", "2048", "--eval-episodes", "32",
               "--stop-success", str(LEVEL), "--seed", "0", "--torch-threads", "1", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "log.json") as f:
        doc = json.load(f)
    evals = [(row["env_steps"], row["eval_success"]) for row in doc["rows"] if "eval_success" in row]
    first = next((steps for steps, success in evals if success >= LEVEL), None)
    assert first is not None, f"never reached {LEVEL} eval success within {BOUND_ENV_STEPS} env steps: {evals}"
    assert first <= BOUND_ENV_STEPS, evals
    assert doc["config"]["torch_threads"] == 1 and doc["config"]["seed"] == 0
