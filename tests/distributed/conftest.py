"""A real Ray instance for the distributed tests, sized for a 2-core machine: 2 CPUs,
no dashboard, a small object store; workers reserve half a CPU each. Always a new
local instance (address="local"), never a cluster another process started here."""
from __future__ import annotations

import os

import pytest
import ray
import torch

WORKER_CPUS = 0.5


def start_local_ray() -> None:
    os.environ.setdefault("RAY_worker_niceness", "0")   # as robosim.distributed.cluster.connect does
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20,
             logging_level="warning", log_to_driver=False)


@pytest.fixture(scope="module")
def local_ray():
    start_local_ray()
    yield
    ray.shutdown()


def assert_same_tree(got, want, path="", atol=0.0):
    """Same keys, shapes and dtypes; bool/int leaves equal, float leaves within atol
    (atol=0: bit-exact)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{path}: keys {sorted(got)} != {sorted(want)}"
        for key in want:
            mask = want.get(f"_{key}") if not key.startswith("_") else None
            if isinstance(mask, torch.Tensor) and key != "final_obs" and isinstance(want[key], (torch.Tensor, dict)):
                # gymnasium's info convention: rows outside `_key` hold no value to compare
                assert torch.equal(got[f"_{key}"], mask), f"{path}/_{key}"
                assert_same_tree(_rows(got[key], mask), _rows(want[key], mask), f"{path}/{key}", atol)
            else:
                assert_same_tree(got[key], want[key], f"{path}/{key}", atol)
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_tree(g, w, f"{path}[{i}]", atol)
    elif isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{path}: {type(got)}"
        assert got.shape == want.shape and got.dtype == want.dtype, \
            f"{path}: {got.shape} {got.dtype} vs {want.shape} {want.dtype}"
        if want.dtype.is_floating_point and atol > 0:
            torch.testing.assert_close(got, want, rtol=0, atol=atol, msg=lambda m: f"{path}: {m}")
        else:
            assert torch.equal(got, want), f"{path}: {got} != {want}"
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


def _rows(value, mask):
    if isinstance(value, dict):
        return {k: _rows(v, mask) for k, v in value.items()}
    return value[mask] if isinstance(value, torch.Tensor) and value.ndim >= 1 and len(value) == len(mask) else value
