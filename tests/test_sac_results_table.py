"""The one-row-per-task table (examples/results/table.py --tasks, from examples/results/tasks.json):
every built-in task has a row, the seed counts agree with the run logs the rows name, and
docs/learning.md holds the table exactly as printed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from task_ids import declared_tasks

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULTS = os.path.join(ROOT, "examples", "results")


def _rows() -> list[dict]:
    with open(os.path.join(RESULTS, "tasks.json")) as f:
        return json.load(f)["rows"]


def _log_dirs(source: str) -> list[str]:
    """'examples/results/x_s0, _s1' -> the run directories it names."""
    first, *more = [part.strip() for part in source.split(",")]
    stem = first.rsplit("_", 1)[0]
    return [os.path.join(ROOT, first)] + [os.path.join(ROOT, stem + suffix) for suffix in more]


def test_every_built_in_task_has_a_row():
    named = {row["task"].split(" (")[0] for row in _rows()}
    builtin = set(declared_tasks())
    assert builtin <= named, f"tasks without a row: {sorted(builtin - named)}"


def test_seed_counts_agree_with_the_logs():
    checked = 0
    for row in _rows():
        dirs = _log_dirs(row["source"]) if row["source"].startswith("examples/results/") else []
        if not dirs or not all(os.path.isfile(os.path.join(d, "log.json")) for d in dirs):
            continue
        reached = 0
        for d in dirs:
            with open(os.path.join(d, "log.json")) as f:
                rows = json.load(f)["rows"]
            reached += any((r.get("eval_success") or 0) >= 0.9 for r in rows)
        assert row["reached"] == f"{reached} of {len(dirs)}", row["task"]
        checked += 1
    assert checked >= 5


def test_learning_doc_holds_the_tasks_table():
    script = os.path.join(RESULTS, "table.py")
    printed = subprocess.run([sys.executable, script, "--tasks"], capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0 and printed.stdout.startswith("| task | recipe |")
    check = subprocess.run([sys.executable, script, "--tasks", "--check", os.path.join(ROOT, "docs", "learning.md")],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
