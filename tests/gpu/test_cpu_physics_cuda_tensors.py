"""CUDA tensors from CPU physics (make(device="cuda") on physx_cpu) and the emulated GPU
system with its buffers on CUDA. Needs a CUDA GPU, not GPU PhysX."""
from __future__ import annotations

import torch

import robosim


def _run(**kwargs) -> list:
    env = robosim.make("PickCube-v1", num_envs=4, **kwargs)
    try:
        obs, _ = env.reset(seed=5)
        out = [obs.cpu()]
        gen = torch.Generator().manual_seed(1)
        for _ in range(10):
            action = torch.rand(4, env.single_action_space.shape[0], generator=gen) * 2 - 1
            obs, reward, terminated, truncated, info = env.step(action.to(kwargs.get("device", "cpu")))
            out.append(obs.cpu())
            for t in (obs, reward, terminated, truncated, info["success"]):
                assert t.device.type == ("cuda" if kwargs.get("device") == "cuda" else "cpu")
        return out
    finally:
        env.close()


def test_cuda_outputs_from_cpu_physics_equal_the_cpu_run():
    on_gpu = _run(device="cuda")
    on_cpu = _run()
    for a, b in zip(on_gpu, on_cpu):
        assert torch.equal(a, b)


def test_emulated_gpu_system_with_cuda_buffers_runs_the_gpu_path():
    env = robosim.make("PickCube-v1", num_envs=4, sim_backend="physx_gpu_emulated", sim_device="cuda")
    try:
        obs, _ = env.reset(seed=0)
        assert obs.device.type == "cuda" and env.get_state().device.type == "cuda"
        policy = env.task.solution_policy()
        success = torch.zeros(4, dtype=torch.bool, device="cuda")
        for _ in range(env.max_episode_steps):
            _, _, _, _, info = env.step(policy())
            success |= info["success"]
        assert bool(success.all())
    finally:
        env.close()
