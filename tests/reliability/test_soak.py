"""The bounded soak: random partial resets, reconfigures and rendering, then 50
make/close cycles; file descriptors and threads stay constant and RSS stays flat."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow   # a bounded soak and 50 close cycles: ~80 s

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bounded_soak_and_50_close_cycles_keep_resources_flat(tmp_path):
    report = tmp_path / "soak.json"
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "soak.py"), "--num-envs", "2", "--env-steps", "1600",
         "--report-every", "400", "--reconfigure-every", "200", "--render-every", "25", "--close-cycles", "50",
         "--max-rss-growth-mb", "64", "--json", str(report)],
        capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    doc = json.loads(report.read_text())
    soak, cycles = doc["soak"], doc["close_cycles"]
    assert soak[-1]["env_steps"] == 1600 and len(cycles) == 50 and doc["problems"] == []
    assert len({row["fds"] for row in soak[1:]}) == 1 and len({row["threads"] for row in soak[1:]}) == 1
    assert len({row["fds"] for row in cycles[5:]}) == 1 and len({row["threads"] for row in cycles[5:]}) == 1
    assert cycles[-1]["rss_mb"] - cycles[5]["rss_mb"] < 64
