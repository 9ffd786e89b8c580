"""PPO and SAC(+HER) smoke runs of a few thousand env steps on Reach-v1: finite losses,
consistently filled buffers, logs, a plot and a checkpoint that `robosim eval` runs."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow   # training runs of thousands of env steps: 13-40 s each

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_run(out, summary, loss_keys):
    doc = json.load(open(out / "log.json"))
    rows = doc["rows"]
    assert [r["env_steps"] for r in rows] == sorted(r["env_steps"] for r in rows)
    trained = [r for r in rows if loss_keys[0] in r]
    assert trained, "no row after training started"
    for row in trained:
        for key in loss_keys:
            assert math.isfinite(row[key]), (key, row)
    for row in rows:
        assert 0.0 <= row["eval_success"] <= 1.0
    assert doc["summary"]["env_steps"] == summary["env_steps"]
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert open(out / "log.csv").readline().startswith("env_steps,wall_s,eval_success")
    return rows


def test_ppo_smoke(tmp_path):
    ppo = load_example("ppo")
    out = tmp_path / "ppo"
    summary = ppo.main(["--num-envs", "8", "--num-steps", "16", "--total-steps", "2048", "--eval-every", "1024",
                        "--eval-episodes", "4", "--out", str(out), "--seed", "1"])
    assert summary["env_steps"] == 2048  # 16 rollouts of 16 steps x 8 envs, each fully collected
    rows = check_run(out, summary, ["pg_loss", "v_loss", "entropy"])
    # SAME_STEP rollouts: every env step is a transition that ends up in some episode's stats
    assert sum(r.get("episodes", 0) for r in rows) >= 8 * (2048 // 8 // 50)
    env = os.environ | {"ROBOSIM_POLICY": str(out / "policy.pt")}
    done = subprocess.run([sys.executable, "-m", "robosim.cli", "eval", "Reach-v1", "--policy",
                           "robosim.rollout.checkpoint:from_env_var", "--episodes", "2", "--num-envs", "2"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "success rate:" in done.stdout
    refused = subprocess.run([sys.executable, "-m", "robosim.cli", "eval", "PushCube-v1", "--policy",
                              "robosim.rollout.checkpoint:from_env_var", "--episodes", "1", "--num-envs", "1"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert refused.returncode != 0
    assert "'task': 'Reach-v1'" in refused.stderr and "'task': 'PushCube-v1'" in refused.stderr


def test_sac_her_smoke(tmp_path):
    sac = load_example("sac")
    out = tmp_path / "sac"
    summary = sac.main(["--num-envs", "4", "--total-steps", "1200", "--learning-starts", "400", "--eval-every", "600",
                        "--eval-episodes", "4", "--batch-size", "64", "--out", str(out), "--seed", "1"])
    assert summary["env_steps"] == 1200
    assert summary["buffer_size"] == 1200  # SAME_STEP: every env step is stored, none twice
    rows = check_run(out, summary, ["q_loss", "actor_loss", "alpha"])
    assert json.load(open(out / "log.json"))["config"]["her_ratio_used"] == pytest.approx(0.8)
    assert rows[-1]["alpha"] > 0
