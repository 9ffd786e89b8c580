"""The README's usage snippet runs as printed (docs must not promise what the code
does not do)."""
from __future__ import annotations

import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def test_usage_snippet_runs():
    text = open(README, encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    usage = [b for b in blocks if b.startswith("import robosim, torch")]
    assert len(usage) == 1, "the README's 'Using it' snippet moved or changed its first line"
    namespace: dict = {}
    exec(compile(usage[0], "README.md", "exec"), namespace)
    assert namespace["state"].shape[0] == 16
