"""The GPU suite (scripts/gpu_check.sh runs it alone, in a fresh process).

Without a CUDA GPU every test here is skipped with the reason. Tests marked `physx_gpu`
also need SAPIEN's PhysX GPU library; GPU PhysX is enabled once, at session start,
before any PhysX object exists (SAPIEN refuses it afterwards)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

NO_CUDA = "no CUDA GPU visible to torch: the GPU suite runs on a GPU machine (scripts/gpu_check.sh)"
_PHYSX_GPU: dict[str, str | None] = {}


def physx_gpu_problem() -> str | None:
    """None when GPU PhysX is enabled in this process, else why not."""
    if "why" not in _PHYSX_GPU:
        from robosim.sim.gpu.physx_cuda import enable_physx_gpu

        try:
            enable_physx_gpu()
            _PHYSX_GPU["why"] = None
        except (RuntimeError, ValueError) as err:
            _PHYSX_GPU["why"] = str(err)
    return _PHYSX_GPU["why"]


def pytest_configure(config):
    config.addinivalue_line("markers", "physx_gpu: needs GPU PhysX (SAPIEN's PhysX GPU library)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    items = [item for item in items if here in Path(item.path).parents]   # this hook sees every test
    if not items:
        return
    if not torch.cuda.is_available():
        for item in items:
            item.add_marker(pytest.mark.skip(reason=NO_CUDA))
        return
    why = physx_gpu_problem()     # first PhysX call of the session
    if why is not None:
        for item in items:
            if "physx_gpu" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=f"GPU PhysX unavailable: {why}"))
