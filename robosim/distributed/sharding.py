"""How N envs are split over K workers, and how the workers' outputs become one batch.

Worker k owns the contiguous global envs [start, stop); global env i is local env
i - start of its worker. Shards differ in size by at most one env. Outputs travel as
numpy trees (one array per key and shard, never one object per env) and are joined
with one torch.cat per key.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robosim.core.tree import leading_dims, leaf_items, tree_map
from robosim.vector.tree import masked_info

# SAME_STEP keys that only a shard with an ending env emits (see BatchedVectorEnv)
FINAL_KEYS = ("final_obs", "_final_obs", "final_info", "_final_info")


@dataclass(frozen=True)
class Shard:
    """Worker `worker_id` runs the global envs [start, stop)."""

    worker_id: int
    start: int
    stop: int

    @property
    def num_envs(self) -> int:
        return self.stop - self.start

    def __str__(self) -> str:
        return f"worker {self.worker_id} (envs {self.start}-{self.stop - 1})"


def split_envs(num_envs: int, workers: int) -> list[Shard]:
    """K contiguous shards of sizes num_envs // K or num_envs // K + 1 (larger first)."""
    base, extra = divmod(num_envs, workers)
    shards, start = [], 0
    for k in range(workers):
        size = base + (1 if k < extra else 0)
        shards.append(Shard(k, start, start + size))
        start += size
    return shards


def to_torch_tree(value: Any) -> Any:
    """numpy leaves -> torch (zero-copy where the array is writable)."""
    def convert(x):
        return torch.from_numpy(x if x.flags.writeable else x.copy()) if isinstance(x, np.ndarray) else x
    return tree_map(convert, value)


def concat_trees(parts: list[Any]) -> Any:
    """Join per-shard trees along dim 0. A leaf missing in some shards reads as zeros
    there, and its `_key` mask says which rows hold it (gymnasium's info convention);
    a non-batched value (e.g. the bool `reconfigure`) is True if any shard's is."""
    if len(parts) == 1:
        return parts[0]
    first = next((p for p in parts if p is not None), None)
    if isinstance(first, dict):
        return _concat_dicts(parts)
    if isinstance(first, tuple):
        return tuple(concat_trees([p[i] for p in parts]) for i in range(len(first)))
    if isinstance(first, torch.Tensor):
        return torch.cat(parts)
    if isinstance(first, (bool, np.bool_)):
        return any(bool(p) for p in parts if p is not None)
    return first


def _concat_dicts(parts: list[dict]) -> dict:
    keys = list(dict.fromkeys(k for p in parts for k in p))
    out: dict[str, Any] = {}
    for key in keys:
        values = [p.get(key) for p in parts]
        present = [v is not None for v in values]
        template = next(v for v in values if v is not None)
        if all(present) or not isinstance(template, (torch.Tensor, dict)):
            out[key] = concat_trees(values)
            continue
        # held by some shards only: zero rows elsewhere, plus a `_key` row mask
        sizes = [_rows(p) for p in parts]
        filled = [v if v is not None else _zeros_tree(template, n) for v, n in zip(values, sizes)]
        out[key] = concat_trees(filled)
        if not key.startswith("_") and f"_{key}" not in keys:
            out[f"_{key}"] = torch.cat([torch.full((n,), p, dtype=torch.bool) for n, p in zip(sizes, present)])
    return out


def _rows(part: dict) -> int:
    leaf = next(v for _, v in leaf_items(part) if isinstance(v, torch.Tensor) and v.ndim >= 1)
    return int(leaf.shape[0])


def _zeros_tree(template: Any, rows: int) -> Any:
    return tree_map(lambda x: torch.zeros((rows, *x.shape[1:]), dtype=x.dtype), template)


def fill_final_keys(obs: Any, info: dict) -> dict:
    """A SAME_STEP shard with no ending env lacks final_obs/final_info; give it the rows a
    single-process env would hold there: the current obs and info, masks all False."""
    if "final_obs" in info:
        return info
    n = int(next(iter(leading_dims(obs))))
    none = torch.zeros(n, dtype=torch.bool)
    info = dict(info)
    info["final_obs"], info["_final_obs"] = obs, none
    info["final_info"], info["_final_info"] = masked_info(info_without_final(info), none), none.clone()
    return info


def info_without_final(info: dict) -> dict:
    """info minus the SAME_STEP final_* entries: what the env's current rows hold."""
    return {k: v for k, v in info.items() if k not in FINAL_KEYS}


def untouched_rows_info(template: dict, current: dict, rows: int) -> dict:
    """Info rows of a worker a partial reset did not touch, shaped like `template` (a
    touched worker's reset info): values from `current` (its last rows), `_k` masks
    False (none of its envs was reset), keys `current` lacks as zeros."""
    out: dict[str, Any] = {}
    for key, value in template.items():
        mine = current.get(key)
        if key.startswith("_") and key[1:] in template and isinstance(value, torch.Tensor):
            out[key] = torch.zeros(rows, dtype=torch.bool)
        elif isinstance(value, dict):
            out[key] = untouched_rows_info(value, mine if isinstance(mine, dict) else {}, rows)
        elif isinstance(value, torch.Tensor) and value.ndim >= 1:
            fits = isinstance(mine, torch.Tensor) and mine.shape[1:] == value.shape[1:] and mine.dtype == value.dtype
            out[key] = mine if fits else torch.zeros((rows, *value.shape[1:]), dtype=value.dtype)
        else:
            out[key] = value
    return out
