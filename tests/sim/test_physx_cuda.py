"""physx_cuda backend: runs only where CUDA exists (never on the project machine)."""
from __future__ import annotations

import pytest
import torch

import robosim
from robosim.sim import resolve_backend

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="physx_cuda needs a CUDA GPU")


def test_auto_picks_cpu_without_cuda_and_cuda_with_it():
    assert resolve_backend("auto") == ("physx_cuda" if torch.cuda.is_available() else "physx_cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_physx_cuda_without_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="physx_cuda' needs a CUDA GPU"):
        robosim.make("PickCube-v1", num_envs=2, sim_backend="physx_cuda")


@cuda
def test_physx_cuda_steps_and_matches_shapes():
    env = robosim.make("PickCube-v1", num_envs=8, sim_backend="physx_cuda")
    try:
        obs, _ = env.reset(seed=0)
        obs, reward, terminated, truncated, _ = env.step(torch.zeros(8, 7, device=env.device))
        assert obs.device.type == "cuda" and obs.shape[0] == 8 and reward.shape == (8,)
    finally:
        env.close()
