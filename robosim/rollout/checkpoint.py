"""Policy checkpoints: a torch.export program `flat obs (N, D) float32 -> action (N, A)`
plus the layout it was trained on (task, robot, control mode, obs keys and shapes),
so any env can run it without the learner's code and a mismatched env is refused.

    save_policy("runs/ppo/policy.pt", actor, env)        # actor: torch.nn.Module
    ROBOSIM_POLICY=runs/ppo/policy.pt robosim eval Reach-v1 \\
        --policy robosim.rollout.checkpoint:from_env_var --video out.mp4
"""
from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

from robosim.core.atomic import write_bytes_atomic
from robosim.core.tree import flatten_obs, leaf_items
from robosim.envs.protocol import BatchedEnv, check_env, checked_device
from robosim.vector.autoreset import BatchedVectorEnv

FORMAT = "robosim-policy-v1"
ENV_VAR = "ROBOSIM_POLICY"


def flatten_space_keys(space: gym.Space, prefix: str = "") -> list[tuple[str, list[int]]]:
    """[(path, shape)] of every Box leaf of a (Dict) space, in the space's own key order
    at every level: for an env's observation space (its Dict spaces keep the obs's key
    order) the order flatten_obs concatenates that env's observations in."""
    return [(path or "obs", [int(d) for d in leaf.shape]) for path, leaf in leaf_items(space, prefix)]


def obs_paths(obs: Any) -> list[str]:
    """The leaf paths of an observation in the order flatten_obs concatenates them, named
    as flatten_space_keys names them ("obs" for a single tensor)."""
    return [path or "obs" for path, _ in leaf_items(obs)]


def _batched_env(env: Any) -> BatchedEnv:
    """The robosim env batch a policy runs on: `env` itself (BaseEnv, or what stands for
    one), or the one inside a robosim vector env and its gymnasium wrappers."""
    if isinstance(env, gym.vector.VectorEnv) and isinstance(env.unwrapped, BatchedVectorEnv):
        env = env.unwrapped.unwrapped_env
    check_env("env", env, BatchedEnv)
    return env


def env_layout(env: Any) -> dict[str, Any]:
    """What a policy depends on: task id, robot, control mode, obs keys/shapes, action dim
    (a multi-robot env's Dict action: the size of its flat view)."""
    header = _batched_env(env).header()
    return {"task": header["task_id"], "robot": header["env_spec"]["robot"], "control_mode": header["control_mode"],
            "obs": flatten_space_keys(env.single_observation_space),
            "action_dim": int(gym.spaces.flatdim(env.single_action_space))}


def check_layout(trained: dict[str, Any], env: Any, source: str) -> None:
    """ValueError naming `source` when the layout a policy was trained on (env_layout of
    its training env, as saved) differs from `env`'s. Observation leaves that are all
    there but in another order get their own error naming both orders: a checkpoint
    saved when flatten_obs sorted dict keys must not run on reordered inputs."""
    trained, here = json.loads(json.dumps(trained)), json.loads(json.dumps(env_layout(env)))
    if trained == here:
        return
    saved_obs, env_obs = trained.get("obs"), here["obs"]
    if saved_obs != env_obs and isinstance(saved_obs, list) and sorted(saved_obs) == sorted(env_obs):
        raise ValueError(f"{source} concatenates its observation leaves in the order "
                         f"{[name for name, _ in saved_obs]}, but flatten_obs concatenates this env's in the order "
                         f"{[name for name, _ in env_obs]} (checkpoints saved when flatten_obs sorted dict keys "
                         f"differ wherever an obs dict is not in sorted order); retrain or re-save the policy")
    diff = {k: (trained.get(k), here.get(k)) for k in set(trained) | set(here) if trained.get(k) != here.get(k)}
    raise ValueError(f"{source} was trained on {trained}, but the env is {here}; "
                     f"differences (checkpoint, env): {diff}")


def save_policy(path: str | os.PathLike, actor: torch.nn.Module, env: Any, extra: dict | None = None) -> None:
    """Export `actor` (flat obs (N, D) float32 -> action (N, A), any N) with torch.export
    and save it with env's layout."""
    layout = env_layout(env)
    dim = sum(int(torch.tensor(shape).prod()) for _, shape in layout["obs"])
    example = torch.zeros(2, dim)
    was_training = actor.training
    actor.eval()
    device = next(iter(actor.parameters()), torch.zeros(())).device
    with torch.no_grad():
        program = torch.export.export(actor.cpu(), (example,), dynamic_shapes=({0: torch.export.Dim("batch", min=1)},))
    actor.to(device).train(was_training)
    meta = {"format": FORMAT, "layout": layout, "extra": extra or {}}
    data = io.BytesIO()
    torch.export.save(program, data, extra_files={"robosim.json": json.dumps(meta)})
    write_bytes_atomic(os.fspath(path), data.getvalue())


def load_policy(path: str | os.PathLike, env: Any) -> Callable[[Any], torch.Tensor]:
    """policy(obs) -> action float32 (N, A) on env.device; ValueError when the file is not
    a robosim policy or env's layout differs from the one it was trained on."""
    if not os.path.isfile(path):
        raise ValueError(f"policy checkpoint must be an existing file, got {os.fspath(path)!r}")
    files = {"robosim.json": ""}
    with open(path, "rb") as f:   # a buffer: torch warns about a file name not ending in .pt2
        data = io.BytesIO(f.read())
    try:
        module = torch.export.load(data, extra_files=files).module()
        meta = json.loads(files["robosim.json"] or "{}")
    except Exception as err:  # torch raises many types for a file that is not an export archive
        raise ValueError(f"policy checkpoint {os.fspath(path)!r} is not a robosim policy ({err})") from None
    if meta.get("format") != FORMAT:
        raise ValueError(f"policy checkpoint {os.fspath(path)!r} must have format {FORMAT!r}, "
                         f"got {meta.get('format')!r}")
    check_layout(meta["layout"], env, f"policy checkpoint {os.fspath(path)!r}")
    device = checked_device(env)
    module = module.to(device)
    expected = [name for name, _ in meta["layout"]["obs"]]

    def policy(obs: Any) -> torch.Tensor:
        if isinstance(obs, dict) and obs_paths(obs) != expected:
            raise ValueError(f"obs must have the leaves {expected} in that order (the policy's inputs), "
                             f"got {obs_paths(obs)}")
        with torch.no_grad():
            return module(flatten_obs(obs).to(device))

    return policy


def from_env_var(env: Any) -> Callable[[Any], torch.Tensor]:
    """Policy factory for `robosim eval --policy robosim.rollout.checkpoint:from_env_var`:
    loads the checkpoint named by the ROBOSIM_POLICY environment variable."""
    path = os.environ.get(ENV_VAR)
    if not path:
        raise ValueError(f"the environment variable {ENV_VAR} must name a policy checkpoint, got {path!r}")
    return load_policy(path, env)
