"""Trees of batched arrays: observations, infos and states as nested dicts/tuples whose
leaves are torch tensors or numpy arrays with a leading batch dim (num_envs).

One key order everywhere: depth-first, each dict in its insertion order (tuples in
position order). It is the order the env's `state` observation has always been
concatenated in (agent/qpos, agent/qvel, extra/tcp_pose, then the task's entries as the
task returns them), so every policy trained on the default `state` observations (the
examples' PPO, BC and Diffusion Policy runs) keeps its inputs. The other order robosim had,
sorted keys (robosim.rollout.flatten_obs for dict observations), differs wherever a
dict's insertion order is not sorted: the goal-conditioned {"observation",
"achieved_goal", "desired_goal"} obs and state_dict; policies saved from such envs with
it see their inputs reordered. gymnasium's `spaces.Dict` sorts plain-dict keys unless
built with sort_keys=False, so flatten observations, not spaces.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import torch

Leaf = torch.Tensor | np.ndarray


def is_leaf(value: Any, num_envs: int) -> bool:
    """True for a tensor/array with leading dim num_envs."""
    return isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim >= 1 and value.shape[0] == num_envs


def tree_map(fn: Callable[[Leaf], Any], tree: Any) -> Any:
    """Apply fn to every tensor/array leaf of a dict/tuple tree; other values pass through."""
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(tree_map(fn, v) for v in tree)
    if isinstance(tree, (torch.Tensor, np.ndarray)):
        return fn(tree)
    return tree


def write_rows(buffers: Any, index: Any, value: Any) -> None:
    """`buffer[index] = value` at every leaf of a dict tree of preallocated tensors, the
    value cast to each buffer's dtype; `value` has the same dict structure."""
    if isinstance(buffers, dict):
        for key in buffers:
            write_rows(buffers[key], index, value[key])
    else:
        buffers[index] = value.to(buffers.dtype)


def to_numpy_tree(tree: Any) -> Any:
    """Every torch tensor of a dict/tuple tree -> a numpy array on the CPU (detached);
    other values pass through."""
    return tree_map(lambda x: x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x, tree)


def leaf_items(tree: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) of every non-mapping value of a nested mapping (a dict, or a
    gymnasium Dict space: its leaves are the sub-spaces), depth-first in insertion
    order; paths join keys with '/' ("agent/qpos"). A non-mapping `tree` is one leaf
    named `prefix` without its trailing '/' ("" by default)."""
    if isinstance(tree, (torch.Tensor, np.ndarray)) or not isinstance(tree, Mapping):   # (tensors skip the ABC check)
        yield prefix.rstrip("/"), tree
        return
    for key, value in tree.items():
        yield from leaf_items(value, f"{prefix}{key}/")


def flatten_obs(obs: Any) -> torch.Tensor:
    """An observation tree (nested dicts of tensors/arrays, leading dim N) -> float32
    (N, D): every leaf reshaped to (N, -1) and concatenated in the module's one order
    (depth-first, insertion order). A single tensor/array is reshaped the same way."""
    flat = []
    for _, leaf in leaf_items(obs):
        if not isinstance(leaf, torch.Tensor):
            leaf = torch.as_tensor(leaf)
        flat.append(leaf if leaf.dim() == 2 else leaf.reshape(leaf.shape[0], -1))   # (N, k) leaves as they are
    out = flat[0] if len(flat) == 1 else torch.cat(flat, dim=1)
    return out if out.dtype == torch.float32 else out.float()


def leading_dims(tree: Any) -> set[int]:
    """The set of leading dims of all leaves (for batch-size checks); -1 for a 0-d leaf."""
    dims: set[int] = set()
    tree_map(lambda x: dims.add(x.shape[0] if x.ndim else -1), tree)
    return dims


def per_env(value: Any, num_envs: int) -> tuple[Any, ...]:
    """One entry per env, as gymnasium's get_attr/call return them: row i of a batched
    value (a tensor/array with leading dim num_envs, or a dict/tuple tree whose every
    leaf has it), otherwise the same value num_envs times."""
    dims = leading_dims(value) if isinstance(value, (dict, tuple, torch.Tensor, np.ndarray)) else set()
    if dims == {num_envs}:
        return tuple(tree_map(operator.itemgetter(i), value) for i in range(num_envs))
    return (value,) * num_envs
