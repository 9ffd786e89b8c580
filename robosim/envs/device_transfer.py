"""CUDA tensors from CPU physics: `robosim.make(..., device="cuda")` with a CPU backend.

ManiSkill2's model for a GPU learner on any CUDA machine: PhysX steps on the CPU, and
every step hands obs, reward, terminated, truncated and the info tensors over on the
GPU; actions may come from the GPU. Each tensor crosses once per step, not once per
env: it is copied into a pinned host buffer kept for that key, then sent with one
non-blocking copy. Before a buffer is overwritten the previous step's copies are
waited for (one CUDA event), so a copy in flight never reads the next step's data.
"""
from __future__ import annotations

from typing import Any

import torch


def check_output_device(device: str | torch.device) -> torch.device:
    """torch.device(device), or a ValueError naming `device` when torch cannot use it."""
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be a torch device name such as 'cpu' or 'cuda', got {device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device must be a device torch can use, got {str(device)!r} (no CUDA GPU is visible)")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or a CUDA device, got {str(device)!r}")
    return device


class DeviceOutputs:
    """`env` (a BaseEnv whose tensors live on the CPU) with its step and reset outputs on
    `device`. Every other attribute is the env's own (task, sim, get_state, ...)."""

    def __init__(self, env, device: str | torch.device):
        device = check_output_device(device)
        if device.type != "cuda":
            raise ValueError(f"device must be a CUDA device (CPU physics hands its tensors to the GPU), "
                             f"got {str(device)!r}")
        self.env = env
        self.device = device
        self._pinned: dict[str, torch.Tensor] = {}
        self._copied: torch.cuda.Event | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def _send(self, value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return {k: self._send(v, f"{key}/{k}") for k, v in value.items()}
        if not isinstance(value, torch.Tensor):
            return value
        buffer = self._pinned.get(key)
        if buffer is None or buffer.shape != value.shape or buffer.dtype != value.dtype:
            buffer = self._pinned[key] = torch.empty(value.shape, dtype=value.dtype, pin_memory=True)
        buffer.copy_(value)
        return buffer.to(self.device, non_blocking=True)

    def _deliver(self, outputs: tuple) -> tuple:
        if self._copied is not None:
            self._copied.synchronize()     # last step's copies have left the pinned buffers
        sent = tuple(self._send(v, str(k)) for k, v in enumerate(outputs))
        self._copied = torch.cuda.Event()
        self._copied.record()
        return sent

    def reset(self, *, seed: Any = None, options: dict | None = None):
        return self._deliver(self.env.reset(seed=seed, options=options))

    def step(self, action: Any):
        if isinstance(action, torch.Tensor):
            action = action.to(self.env.device)
        return self._deliver(self.env.step(action))

    def close(self) -> None:
        self.env.close()
