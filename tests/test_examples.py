"""The examples in examples/ run as a user would run them."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow   # each runs an example script: 12-47 s

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def test_custom_task_example_registers_and_solves_its_task():
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "custom_task.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    match = re.search(r"obs \(8, (\d+)\), lifted in (\d+)/8 envs", result.stdout)
    assert match, result.stdout
    assert int(match.group(2)) >= 7


USER_PACKAGE = '''
import torch
import robosim


@robosim.register_task("UserHold-v1")
class UserHold(robosim.Task):
    max_episode_steps = 8

    def evaluate(self):
        tcp = self.robot.tcp_pose()[:, :3]
        return {"success": tcp[:, 2] > 10.0, "fail": torch.zeros(self.num_envs, dtype=torch.bool)}

    def dense_reward(self, info):
        return -torch.tanh(self.robot.tcp_pose()[:, 2]).clamp(min=0)
'''


def test_learner_trains_a_task_of_a_package_in_the_current_directory(tmp_path):
    (tmp_path / "usertasks").mkdir()
    (tmp_path / "usertasks" / "__init__.py").write_text(USER_PACKAGE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, os.path.abspath(os.path.join(EXAMPLES, "ppo.py")),
                             "--import", "usertasks", "--task", "UserHold-v1", "--num-envs", "2", "--num-steps", "4",
                             "--total-steps", "16", "--eval-every", "16", "--eval-episodes", "2", "--out", "run"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "run" / "policy.pt").exists()


def test_rendering_memory_soak_samples_rss_and_writes_its_json(tmp_path):
    out = tmp_path / "soak.json"
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "rendering_memory_soak.py"), "--env-steps", "16",
                             "--num-envs", "2", "--res", "32", "--every", "8", "--json", str(out)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["env_steps"] == 16 and [s["env_steps"] for s in doc["rss_mb"]] == [8, 16]
    assert all(s["rss_mb"] > 0 for s in doc["rss_mb"]) and doc["rss_peak_mb"] >= doc["rss_last_mb"]
    assert "MB per 10^4 env-steps" in result.stdout
    bad = subprocess.run([sys.executable, os.path.join(EXAMPLES, "rendering_memory_soak.py"), "--every", "0"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--every" in bad.stderr
