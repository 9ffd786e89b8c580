"""Argument validation shared by the env and vector layers.

Every check raises ValueError/TypeError naming the argument, what was expected and
what was given, before any state is touched, so the env stays usable afterwards."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def to_float_tensor(name: str, value: Any, shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """Convert a torch/numpy float array of exactly `shape` to float32 on device,
    detached (an env does not carry gradients: a policy's output may be passed as is)."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array of shape {shape}, got {type(value).__name__}")
    if not value.dtype.is_floating_point:
        raise ValueError(f"{name} must have a floating dtype (float32 expected), got {value.dtype}")
    if value.shape != shape:   # torch.Size compares with a tuple
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(value.shape)}")
    # finiteness is checked where the values are on the host (numpy and CPU tensors: no
    # GPU sync); a tensor already on a GPU is not checked here, since a check would stall
    # the step on a host synchronization: a NaN there shows up as info["sim_fault"]
    if value.device.type == "cpu" and not _all_finite(value):
        bad = (~torch.isfinite(value)).nonzero()[0].tolist()
        raise ValueError(f"{name} must be finite, got NaN/inf at index {bad}")
    if value.dtype == torch.float32 and value.device == device and not value.requires_grad:
        return value     # already what is asked for: no copy (callers build new tensors from it)
    return value.detach().to(device=device, dtype=torch.float32)


def _all_finite(value: torch.Tensor) -> bool:
    """Whether every entry of a CPU float tensor is finite (numpy where it can read the
    dtype: a quarter of torch's per-call cost for a one-env action)."""
    if value.dtype in (torch.float32, torch.float64, torch.float16):
        return bool(np.isfinite((value.detach() if value.requires_grad else value).numpy()).all())
    return bool(torch.isfinite(value).all())


MAX_SEED = 2**63 - 1   # seeds are stored as int64


def is_int(value: Any) -> bool:
    """An int or numpy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def to_env_index(name: str, value: Any, num_envs: int, device: torch.device) -> torch.Tensor:
    """Validate a set of env indices: 1-D ints in [0, num_envs), non-empty, no duplicates.
    A list/tuple must hold ints (no bools or floats: they would be cast silently)."""
    if isinstance(value, (list, tuple, range)):
        bad = [v for v in value if not is_int(v)]
        if bad:
            raise ValueError(f"{name} must hold ints (env indices), got {bad[0]!r} ({type(bad[0]).__name__})")
        value = torch.as_tensor([int(v) for v in value], dtype=torch.int64)
    elif isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a 1-D int tensor of env indices, got {type(value).__name__}")
    if value.dtype == torch.bool or value.dtype.is_floating_point or value.dtype.is_complex:
        raise ValueError(f"{name} must have an integer dtype, got {value.dtype}")
    if value.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(value.shape)}")
    if value.numel() == 0:
        raise ValueError(f"{name} must name at least one env, got an empty index")
    value = value.to(torch.int64).cpu()
    if value.min() < 0 or value.max() >= num_envs:
        raise ValueError(f"{name} entries must be in [0, {num_envs - 1}], got {value.tolist()}")
    if value.unique().numel() != value.numel():
        raise ValueError(f"{name} must not repeat an env, got {value.tolist()}")
    return value.to(device)


def to_bool_mask(name: str, value: Any, num_envs: int) -> torch.Tensor:
    """Validate a (num_envs,) boolean mask and return it as a CPU bool tensor."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a bool tensor/array of shape ({num_envs},), got {type(value).__name__}")
    if value.dtype != torch.bool:
        raise ValueError(f"{name} must have dtype bool, got {value.dtype}")
    if tuple(value.shape) != (num_envs,):
        raise ValueError(f"{name} must have shape ({num_envs},), got {tuple(value.shape)}")
    return value.cpu()


def to_seeds(name: str, seed: Any, env_idx: torch.Tensor) -> list[int] | None:
    """int -> seed + i for each env i in env_idx; list -> one seed per entry of env_idx."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int, a list of ints or None, got {seed!r}")
    if is_int(seed):
        seeds = [int(seed) + int(i) for i in env_idx.tolist()]
    elif isinstance(seed, (list, tuple, np.ndarray, torch.Tensor)):
        if isinstance(seed, (np.ndarray, torch.Tensor)) and seed.ndim != 1:
            raise ValueError(f"{name} array must be 1-D, got shape {tuple(seed.shape)}")
        values = seed.tolist() if hasattr(seed, "tolist") else list(seed)
        bad = [s for s in values if not is_int(s)]
        if bad:
            raise TypeError(f"{name} list must hold ints, got {bad[0]!r} ({type(bad[0]).__name__})")
        seeds = [int(s) for s in values]
        if len(seeds) != len(env_idx):
            raise ValueError(f"{name} list must have one seed per env being reset ({len(env_idx)}), got {len(seeds)}")
    else:
        raise TypeError(f"{name} must be an int, a list of ints or None, got {type(seed).__name__}")
    if min(seeds) < 0:
        raise ValueError(f"{name} must be >= 0, got {seed!r}")
    if max(seeds) > MAX_SEED:
        raise ValueError(f"{name} must be <= 2**63 - 1 for every env being reset (seeds are int64), got {seed!r}")
    return seeds


def to_bool(name: str, value: Any) -> bool:
    """A real bool (numpy/torch 0-d bools too); a string such as "false" is refused."""
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.numel() == 1:
        return bool(value)
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r} ({type(value).__name__})")
    return bool(value)
