"""scripts/step_profile.py: the per-stage timing of BaseEnv.step that docs/performance.md
quotes. It must time every stage inside real steps, leave the process as it found it
(the module-wide action check unwrapped) and write its JSON."""
from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from robosim.envs import checks

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "step_profile.py"


def test_every_stage_is_timed_and_the_action_check_is_unwrapped_after():
    profile = runpy.run_path(str(SCRIPT))["profile"]
    before = checks.to_float_tensor
    result = profile("PushCube-v1", "pd_joint_delta_pos", num_envs=2, blocks=2, steps=5, seed=0)
    assert checks.to_float_tensor is before
    stages = result["stages_us"]
    for name in ("action check", "controller (apply_action)", "physics substeps", "fault check",
                 "evaluate (task)", "observation", "reward"):
        assert stages[name] > 0, name
    assert "bookkeeping" in stages and result["us_per_control_step"] > 0


@pytest.mark.slow   # runs the profiler script: ~8 s
def test_command_line_writes_json(tmp_path):
    out = tmp_path / "profile.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--task", "PushCube-v1", "--blocks", "1", "--steps", "3",
                           "--control-modes", "pd_joint_delta_pos", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "physics substeps" in proc.stdout
    data = json.loads(out.read_text())
    assert data["results"][0]["task"] == "PushCube-v1" and data["results"][0]["num_envs"] == 1
