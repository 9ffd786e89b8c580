"""BatchedEnv: the surface of a batched env that robosim's tools rely on.

record/ (RecordEpisode, evaluation), rollout/ (collector, checkpoints) and distributed/
type against this protocol, never against BaseEnv's other attributes. BaseEnv satisfies
it; so do wrappers that forward it (robosim.envs.device_transfer.DeviceOutputs,
robosim.record.wrapper.RecordEpisode) and robosim.distributed.eval.ShardedEvalEnv, whose
envs live in Ray workers.

BatchedEnvCore is the part robosim.vector and the rollout collector need, which
user-written batched envs and vector envs have too.

`header()` is the JSON-able description trajectory files store as root attributes:
    robosim_version, task_id (registered id), env_spec (robosim.EnvSpec.to_dict() of the
    env, seed = the per-env asset build seeds: robosim.envs.make_env rebuilds it), num_envs,
    state_dim, action_dim, sim_backend, control_mode (a str, or {robot slot: mode} when
    the env was made with one mode per robot), control_freq (control steps per second).
"""
from __future__ import annotations

from typing import Any, Generic, Protocol, runtime_checkable

import gymnasium as gym
import torch


@runtime_checkable
class BatchedEnvCore(Protocol):
    """What robosim.vector's wrappers and the rollout collector need: N envs stepped
    together, torch tensors with leading dim N on `device`. BatchedEnv, a user's batched
    env (examples/chasing_vec_env.py), robosim.vector.ListBatchedEnv and every torch
    vector env of robosim.vector have it."""

    num_envs: int
    device: torch.device
    single_observation_space: gym.Space
    single_action_space: gym.Space
    metadata: dict[str, Any]
    render_mode: str | None              # "rgb_array" | "sensors" | None: what render() returns

    def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset all envs, or those options name; returns (obs, info) for all N."""

    def step(self, action: Any) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """(obs, reward (N,), terminated (N,), truncated (N,), info) after one control step."""

    def render(self) -> Any:
        """Frames for render_mode, or None without one."""

    def close(self) -> None:
        """Release the envs; safe to call twice."""


@runtime_checkable
class BatchedEnv(BatchedEnvCore, Protocol):
    """A robosim env batch (BaseEnv and what stands for one): BatchedEnvCore plus what
    recording, replay, checkpoints and distributed evaluation read."""

    elapsed_steps: torch.Tensor          # int32 (N,) control steps of each env's episode
    build_seeds: list[int]               # per-env seeds of the current build (make(seed=...) rebuilds it)

    def get_state(self) -> torch.Tensor:
        """float32 (N, state_dim): what set_state / replay restores."""

    def header(self) -> dict[str, Any]:
        """The JSON-able description of this env (module docstring)."""


def members(protocol: type) -> list[str]:
    """The attribute and method names a protocol class declares (its bases' included)."""
    names: list[str] = []
    for cls in reversed(protocol.__mro__):
        if cls in (object, Protocol, Generic) or not getattr(cls, "_is_protocol", False):
            continue
        names += [n for n in cls.__dict__.get("__annotations__", {}) if n not in names]
        names += [n for n, v in cls.__dict__.items() if callable(v) and not n.startswith("_") and n not in names]
    return names


def check_env(arg: str, env: Any, protocol: type = BatchedEnvCore) -> None:
    """TypeError naming `arg`, the protocol and the members `env` lacks, unless it
    satisfies `protocol` (BatchedEnvCore or BatchedEnv)."""
    if not isinstance(env, protocol):
        lacking = [n for n in members(protocol) if not hasattr(env, n)]
        raise TypeError(f"{arg} must follow the batched env contract robosim.envs.protocol.{protocol.__name__} "
                        f"(missing {', '.join(f'`{n}`' for n in lacking)}), got {type(env).__name__}")


def checked_device(env: Any, arg: str = "env") -> torch.device:
    """`env.device` of a BatchedEnvCore (a torch batched or vector env); TypeError naming
    `arg` for anything else, e.g. TorchToNumpy's numpy output."""
    check_env(arg, env)
    return torch.device(env.device)
