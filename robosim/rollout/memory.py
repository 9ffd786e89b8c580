"""Refuse buffers that do not fit in memory before allocating them."""
from __future__ import annotations

import psutil
import torch


def available_bytes(device: torch.device) -> int:
    """Free memory (bytes) on `device`: free GPU memory for cuda, available RAM otherwise."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return int(psutil.virtual_memory().available)


def check_fits(what: str, nbytes: int, device: torch.device, fraction: float = 0.8) -> None:
    """ValueError naming `what` and its size when nbytes exceeds `fraction` of the free
    memory on device (leave room for the env and the learner)."""
    free = available_bytes(device)
    if nbytes > fraction * free:
        raise ValueError(f"{what} needs {nbytes / 2**30:.2f} GiB on {device}, more than {fraction:.0%} of the "
                         f"{free / 2**30:.2f} GiB available; use fewer steps, envs or a smaller capacity")


def tree_nbytes(shapes: dict[str, tuple[tuple[int, ...], torch.dtype]]) -> int:
    """Total bytes of tensors given as {name: (shape, dtype)}."""
    total = 0
    for shape, dtype in shapes.values():
        count = 1
        for d in shape:
            count *= int(d)
        total += count * torch.empty((), dtype=dtype).element_size()
    return total
