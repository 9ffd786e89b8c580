"""The examples in examples/ run as a user would run them."""
from __future__ import annotations

import os
import re
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def test_custom_task_example_registers_and_solves_its_task():
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "custom_task.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    match = re.search(r"obs \(8, (\d+)\), lifted in (\d+)/8 envs", result.stdout)
    assert match, result.stdout
    assert int(match.group(2)) >= 7
