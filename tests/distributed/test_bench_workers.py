"""`robosim bench --workers 1,2 --dry-run`: every case runs and the JSON holds what the
report prints; the projection follows the printed formula from the measured numbers."""
from __future__ import annotations

import json

import pytest

from robosim.cli import main

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers


def test_bench_workers_dry_run_writes_cases_overhead_and_projection(local_ray, tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert main(["bench", "--workers", "1,2", "--dry-run", "--no-progress", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "env-steps/s(M) = M * n / (n / r + t_ray)" in out and f"results: {path}" in out
    doc = json.loads(path.read_text())
    cases = {(c["num_envs"], c["workers"]): c for c in doc["cases"]}
    assert set(cases) == {(4, None), (4, 1), (4, 2)}
    for k in (1, 2):
        c = cases[(4, k)]
        assert c["envs_per_worker"] == 4 // k and 0 < c["worker_step_ms_median"] < c["step_ms_median"]
        assert c["step_result_bytes"] > 0 and c["vs_one_process"] > 0
    (proj,) = doc["projections"]
    assert proj["from_case"] == "2 Ray workers"
    n, r, t = proj["n"], proj["r"], proj["t_ray_s"]
    for m, rate in proj["env_steps_per_s"].items():
        assert rate == pytest.approx(int(m) * n / (n / r + t))


@pytest.mark.parametrize("workers, message", [("0", "--workers must be ints >= 1, got '0'"),
                                               ("one", "--workers must be comma-separated ints such as 1,2")])
def test_bad_workers_lists_are_one_error_line(workers, message, capsys):
    assert main(["bench", "--workers", workers, "--dry-run", "--json", "-"]) == 2
    assert message in capsys.readouterr().err


def test_a_json_path_in_a_missing_directory_is_refused_before_the_run(tmp_path, capsys):
    path = tmp_path / "missing" / "bench.json"
    assert main(["bench", "--workers", "1,2", "--json", str(path)]) == 2
    assert "--json must be in an existing directory" in capsys.readouterr().err
    assert not path.parent.exists()
