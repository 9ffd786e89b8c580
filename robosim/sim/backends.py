"""The backend factory: which SimScene a backend name builds, and where its tensors live.

Backends: `physx_cpu` (robosim.sim.scene, or robosim.sim.isolation with one system per
env), `physx_cuda` and `physx_gpu_emulated` (robosim.sim.gpu.scene, the system held by
robosim.sim.gpu.system), and `auto`, resolved here.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from robosim.sim.building import ObjectModifier, check_object_modifiers
from robosim.sim.gpu.physx_cuda import cuda_backend_usable
from robosim.sim.gpu.scene import GPU_BACKENDS, GpuSimScene
from robosim.sim.isolation import IsolatedSimScene, check_isolation
from robosim.sim.physics import PhysicsConfig
from robosim.sim.scene import SimScene

SIM_BACKENDS = ("physx_cpu", "physx_cuda", "physx_gpu_emulated", "auto")


def resolve_backend(sim_backend: str) -> str:
    """Map "auto" to physx_cuda where GPU PhysX really starts in this process, else
    physx_cpu (robosim.sim.gpu.physx_cuda.cuda_backend_usable)."""
    if sim_backend not in SIM_BACKENDS:
        raise ValueError(f"sim_backend must be one of {SIM_BACKENDS}, got {sim_backend!r}")
    if sim_backend == "auto":
        return "physx_cuda" if torch.cuda.is_available() and cuda_backend_usable() else "physx_cpu"
    return sim_backend


def backend_device(backend: str, sim_device: str | torch.device | None = None) -> torch.device:
    """The torch device a resolved backend's tensors live on: CUDA for physx_cuda,
    `sim_device` (default cpu) for physx_gpu_emulated, cpu otherwise (ValueError for a
    sim_device another backend cannot honour)."""
    if backend == "physx_cuda":
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cuda")
    if backend == "physx_gpu_emulated":
        device = torch.device("cpu" if sim_device is None else sim_device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"sim_device must be a device torch can use, got {sim_device!r} (no CUDA GPU is visible)")
        return device
    if sim_device is not None and torch.device(sim_device).type != "cpu":
        raise ValueError(f"sim_device must be None or 'cpu' with sim_backend {backend!r} (its physics state "
                         f"lives on the CPU; 'physx_gpu_emulated' can keep it on another device), got {sim_device!r}")
    return torch.device("cpu")


def create_sim_scene(sim_backend: str, num_envs: int, sim_freq: int,
                     physics: PhysicsConfig | None = None, isolation: str = "shared",
                     render: bool = True, sim_device: str | torch.device = "cpu",
                     object_modifiers: Mapping[str, Sequence[ObjectModifier]] | None = None) -> SimScene:
    """Construct the SimScene for a backend name ("auto" resolved here); isolation
    "separate" gives every env its own PhysX system (robosim.sim.isolation); render=False
    builds no render system (no cameras possible, no Vulkan needed); sim_device is where
    the emulated GPU system keeps its buffers (physx_gpu_emulated only); object_modifiers
    ({object name: [f(env_index, RigidObject) -> RigidObject]}) rewrite the descriptions
    the scene's add_object / add_object_pool build under those names."""
    object_modifiers = check_object_modifiers(object_modifiers)   # refused before anything is built
    backend = resolve_backend(sim_backend)
    if isolation != "shared":
        check_isolation(isolation, backend)
        scene = IsolatedSimScene(num_envs, sim_freq, physics)
    elif backend in GPU_BACKENDS:
        scene = GpuSimScene(num_envs, sim_freq, physics, render=render, backend=backend, sim_device=sim_device)
    else:
        scene = SimScene(num_envs, sim_freq, physics, render=render)
    scene.use_object_modifiers(object_modifiers)
    return scene
