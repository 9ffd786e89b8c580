"""A step-count learning test for the off-policy learner with demonstrations
(examples/rlpd.py: SAC, every batch half demo transitions, LayerNorm critic ensemble):
from 10 scripted Reach-v1 demos it reaches LEVEL evaluation success within a fixed number
of env steps. Evaluation is robosim.record.evaluate on 32 seeded episodes from seed
10,000 (the demos used seeds 0-9: held out), from the task's own initial states. Seed 0
and one torch thread fix the run's randomness (repeated runs on one machine were
identical), but another machine gave another learning curve, which is why LEVEL and
the bound leave a margin (docs/learning.md gives the curves measured on two machines).
The test asserts env steps, never wall time. It calls rlpd.train in this process; train
seeds its own RNG and restores the caller's thread count and global RNG state."""
from __future__ import annotations

import json
import os
import sys

import pytest

from robosim.demos import generate_demos

pytestmark = pytest.mark.slow   # a training run: ~75 s of CPU (docs/learning.md)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import rlpd  # noqa: E402

EVAL_EVERY = 500
# Measured with these flags (seed 0): the first evaluation at >= LEVEL came at 1,000 env
# steps on one machine and 1,500 on another (their curves differ from 500 env steps on);
# seeds 1-3 reached it at 2,000, 1,500 and 2,500. The bound is twice the seed-0 figure, so
# a numeric change that moves learning by an evaluation or two passes, while a learner
# that stops learning (0.03-0.06 before any update) fails.
MEASURED_ENV_STEPS = 1_500
BOUND_ENV_STEPS = MEASURED_ENV_STEPS * 2   # 3,000
LEVEL = 0.4


def test_rlpd_reaches_the_level_on_reach_within_the_step_bound(tmp_path):
    demos = str(tmp_path / "reach10.h5")
    generate_demos("Reach-v1", 10, demos, num_envs=10, seed=0)
    out = tmp_path / "rlpd_reach"
    args = rlpd.parse_args(["--demos", demos, "--num-envs", "2", "--total-steps", str(BOUND_ENV_STEPS),
                            "--hidden", "64", "--batch-size", "64", "--utd", "4", "--lr", "1e-3",
                            "--init-alpha", "0.01", "--learning-starts", "200", "--eval-every", str(EVAL_EVERY),
                            "--eval-episodes", "32", "--eval-envs", "32", "--stop-success", str(LEVEL),
                            "--seed", "0", "--torch-threads", "1", "--out", str(out)])
    rlpd.train(args)
    with open(out / "log.json") as f:
        doc = json.load(f)
    evals = [(row["env_steps"], row["eval_success"]) for row in doc["rows"]]
    first = next((steps for steps, success in evals if success >= LEVEL), None)
    assert first is not None, f"never reached {LEVEL} eval success within {BOUND_ENV_STEPS} env steps: {evals}"
    assert first <= BOUND_ENV_STEPS, evals
    assert evals[0][1] < 0.2, evals   # the untrained policy does not already pass
    assert doc["config"]["seed"] == 0 and doc["summary"]["torch_threads"] == 1
