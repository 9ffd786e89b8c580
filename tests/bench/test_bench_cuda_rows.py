"""physx_cuda benchmark rows: never in the CPU process, and a CUDA case that cannot run
reports why instead of aborting the benchmark."""
from __future__ import annotations

import pytest
import torch

from robosim.bench.runner import BenchConfig, _cases_for, run_cuda_case


def test_cpu_process_never_builds_cuda_cases():
    cfg = BenchConfig(sim_backends=("physx_cpu", "physx_cuda"))
    cases = _cases_for(4, cfg)
    assert cases and all(c.sim_backend == "physx_cpu" for c in cases)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the report of a case that cannot run")
def test_cuda_case_without_a_gpu_reports_the_reason():
    result = run_cuda_case("robosim", 2, "pd_joint_delta_pos", repeats=1, block_steps=2, seed=0, timeout=300)
    assert set(result) == {"error"}
    assert "physx_cuda' needs a CUDA GPU" in result["error"]
