"""The vector layer's helpers over batched trees (robosim.core.tree: a leaf is a torch
tensor or numpy array whose leading dim is num_envs; inner nodes are dicts or tuples).

Info dicts follow gymnasium's vector convention: a key `k` may come with a bool mask
`_k` (N,) saying which envs hold a value. robosim's batched envs fill every row, so
their info has no masks; list-backed envs (one gymnasium env per row) have masks.
Masks are always torch bool tensors on the env's device (TorchToNumpy converts them).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robosim.core.tree import Leaf, is_leaf


def _row_mask(mask: torch.Tensor, leaf: Leaf) -> Leaf:
    """mask (N,) reshaped to broadcast over leaf (N, ...), in leaf's array type/device."""
    shape = (leaf.shape[0],) + (1,) * (leaf.ndim - 1)
    if isinstance(leaf, np.ndarray):
        return mask.cpu().numpy().reshape(shape)
    return mask.to(leaf.device).reshape(shape)


def where(mask: torch.Tensor, a: Any, b: Any) -> Any:
    """Row-wise select over two trees of the same structure: a where mask, else b."""
    if isinstance(a, dict):
        return {k: where(mask, a[k], b[k]) for k in a}
    if isinstance(a, tuple):
        return tuple(where(mask, x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.where(_row_mask(mask, a), a, b)
    return torch.where(_row_mask(mask, a), a, b.to(a.device))


def _zeros_like(leaf: Leaf) -> Leaf:
    return np.zeros_like(leaf) if isinstance(leaf, np.ndarray) else torch.zeros_like(leaf)


def _mask_of(info: dict, key: str, num_envs: int, device: torch.device) -> torch.Tensor:
    """Which envs hold info[key]: its `_key` mask, all envs for a batched value, none if absent."""
    if f"_{key}" in info:
        return torch.as_tensor(info[f"_{key}"], device=device).to(torch.bool)
    present = key in info and (is_leaf(info[key], num_envs) or isinstance(info[key], dict))
    return torch.full((num_envs,), present, dtype=torch.bool, device=device)


def merge_info(old: dict, new: dict, mask: torch.Tensor) -> dict:
    """Info of a batch where the envs in `mask` were just reset: rows in mask come from
    `new` (the reset info), the others from `old` (the step info), as gymnasium's
    SyncVectorEnv builds it. Non-batched values (e.g. the bool `reconfigure`) are dropped.
    `_k` masks are emitted whenever a key is not held by every env."""
    n, device = mask.shape[0], mask.device
    out: dict[str, Any] = {}
    keys = [k for k in dict.fromkeys([*old, *new]) if not (k.startswith("_") and k[1:] in old | new)]
    for key in keys:
        a, b = old.get(key), new.get(key)
        held_a, held_b = _mask_of(old, key, n, device), _mask_of(new, key, n, device)
        if isinstance(a, dict) or isinstance(b, dict):
            out[key] = merge_info(a if isinstance(a, dict) else {}, b if isinstance(b, dict) else {}, mask)
        elif is_leaf(a, n) and is_leaf(b, n) and a.shape == b.shape and type(a) is type(b):
            out[key] = where(mask, b, a)
        elif is_leaf(a, n) or is_leaf(b, n):
            # held by one side only (or shapes differ): the other side's rows read as zeros
            a = a if is_leaf(a, n) and (not is_leaf(b, n) or a.shape == b.shape) else _zeros_like(b)
            b = b if is_leaf(b, n) else _zeros_like(a)
            out[key] = where(mask, b, a)
        else:
            continue
        held = torch.where(mask, held_b, held_a)
        if f"_{key}" in old or f"_{key}" in new or not bool(held.all()):
            out[f"_{key}"] = held
    return out


def masked_info(info: dict, mask: torch.Tensor) -> dict:
    """A copy of `info` whose `_k` masks say "held and in mask" (for `final_info`)."""
    n = mask.shape[0]
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_") and key[1:] in info:
            continue
        if isinstance(value, dict):
            out[key] = masked_info(value, mask)
        elif is_leaf(value, n):
            out[key] = value
        else:
            continue
        held = _mask_of(info, key, n, mask.device) & mask
        out[f"_{key}"] = held
    return out


def reset_rows(options: dict | None, num_envs: int, device: torch.device) -> torch.Tensor:
    """bool (num_envs,): the envs a vector reset call touches (all, unless
    options["reset_mask"] or options["env_idx"] names a subset)."""
    rows = torch.ones(num_envs, dtype=torch.bool, device=device)
    if options and options.get("reset_mask") is not None:
        rows = torch.as_tensor(options["reset_mask"], device=device).to(torch.bool)
    elif options and options.get("env_idx") is not None:
        rows = torch.zeros_like(rows)
        rows[torch.as_tensor(options["env_idx"], device=device).long()] = True
    return rows


def batch_scalars(info: dict, num_envs: int, device: torch.device) -> dict:
    """A copy of info where plain bool/int/float values (a user-written batched env may return them)
    become (num_envs,) tensors, so every entry is batched as gymnasium's wrappers expect."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, (bool, int, float, np.bool_, np.number)):
            value = torch.full((num_envs,), value, device=device)
        out[key] = value
    return out


def add_masks(info: dict, held: torch.Tensor) -> dict:
    """info with a bool (N,) mask `_k` beside every key `k` that has none (gymnasium's
    vector info convention); missing masks read `held`. Nested info dicts get theirs
    too (under their own mask); `final_obs` is an observation, not info, and is left as is."""
    out = dict(info)
    for key, value in info.items():
        if key.startswith("_") and key[1:] in info:
            continue
        if isinstance(value, dict) and key != "final_obs":
            out[key] = add_masks(value, torch.as_tensor(info.get(f"_{key}", held), device=held.device))
        if f"_{key}" not in info:
            out[f"_{key}"] = held
    return out
