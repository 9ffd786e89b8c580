"""robosim.view.bench: the with/without-viewer measurement runs end to end (a browser
stand-in connected) and reports what it measured; the speed itself is not asserted."""
from __future__ import annotations

import json
import math

import pytest

from robosim.view.bench import format_viewer_cost, main, measure_viewer_cost


def test_the_viewer_cost_row():
    row = measure_viewer_cost(num_envs=2, steps=4, repeats=2, hz=1e6, progress=False)   # hz: every step pushes
    assert row["num_envs"] == 2 and row["client"]
    assert all(len(row["runs"][v]) == 2 and all(r > 0 and math.isfinite(r) for r in row["runs"][v])
               for v in ("with", "without"))
    assert all(len(row["cpu_runs"][v]) == 2 for v in ("with", "without")) and row["cpu_ratio"] > 0
    assert row["pushes"] == 2 * 4 and row["push_ms"] > 0
    assert row["ratio"] > 0
    text = format_viewer_cost(row)
    assert "with viewer" in text
    assert [line.split()[:2] for line in text.splitlines()[-2:]] == [["2", "wall"], ["2", "cpu"]]


def test_the_module_command_has_help_and_refuses_bad_sizes(capsys, tmp_path):
    """`python -m robosim.view.bench --help` describes it (it used to start the measurement);
    a bad size is an argparse error naming the option, before any env is built."""
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0 and "--num-envs" in capsys.readouterr().out
    for bad, name in ((["--num-envs", "0"], "--num-envs"), (["--hz", "0"], "--hz"), (["--repeats", "0"], "--repeats")):
        with pytest.raises(SystemExit) as done:
            main(bad)
        assert done.value.code == 2 and name in capsys.readouterr().err
    out = tmp_path / "cost.json"
    assert main(["--num-envs", "2", "--steps", "2", "--repeats", "1", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["num_envs"] == 2
