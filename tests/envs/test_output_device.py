"""make(device=...): where step and reset hand their tensors over (CUDA tensors from CPU
physics are checked on a GPU machine: tests/gpu/test_cpu_physics_cuda_tensors.py)."""
from __future__ import annotations

import pytest
import torch

import robosim


@pytest.mark.parametrize("device, message", [
    ("nonsense", "device must be a torch device name"),
    (3.5, "device must be a torch device name"),
    ("meta", "device must be 'cpu' or a CUDA device"),
] + ([] if torch.cuda.is_available() else [("cuda", "no CUDA GPU is visible")]))
def test_a_device_torch_cannot_use_is_refused_before_the_build(device, message):
    with pytest.raises(ValueError, match=message):
        robosim.make("Reach-v1", num_envs=1, device=device)


def test_sim_device_is_refused_where_the_backend_cannot_honour_it():
    with pytest.raises(ValueError, match="sim_device must be None or 'cpu' with sim_backend 'physx_cpu'"):
        robosim.make("Reach-v1", num_envs=1, sim_device="meta")


def test_the_physics_device_itself_gives_the_plain_env():
    env = robosim.make("Reach-v1", num_envs=1, device="cpu")
    try:
        assert type(env).__name__ == "BaseEnv" and env.device == torch.device("cpu")
    finally:
        env.close()
