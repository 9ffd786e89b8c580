"""BatchedEnv: the surface of a batched env that robosim's tools rely on.

record/ (RecordEpisode, evaluation), rollout/ (collector, checkpoints) and distributed/
type against this protocol, never against BaseEnv's other attributes. BaseEnv satisfies
it; so do wrappers that forward it (robosim.envs.device_transfer.DeviceOutputs,
robosim.record.wrapper.RecordEpisode) and robosim.distributed.eval.ShardedEvalEnv, whose
envs live in Ray workers.

`header()` is the JSON-able description trajectory files store as root attributes:
    robosim_version, task_id (registered id), env_kwargs (robosim.make keyword arguments
    that rebuild this env: control_mode, reward_mode, sim_backend, max_episode_steps,
    reconfiguration_freq, physics_isolation, randomization, seed (per-env build seeds),
    robot, task parameters; obs_mode "none"), num_envs, state_dim, action_dim,
    sim_backend, control_mode, control_freq (control steps per second).
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import torch


@runtime_checkable
class BatchedEnv(Protocol):
    """N envs stepped together; every tensor has leading dim N and lives on `device`."""

    num_envs: int
    device: torch.device
    single_observation_space: gym.Space
    single_action_space: gym.Space
    elapsed_steps: torch.Tensor          # int32 (N,) control steps of each env's episode
    render_mode: str | None              # "rgb_array" | "sensors" | None: what render() returns

    def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset all envs, or options["env_idx"]; returns (obs, info) for all N."""

    def step(self, action: Any) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """(obs, reward (N,), terminated (N,), truncated (N,), info) after one control step."""

    def get_state(self) -> torch.Tensor:
        """float32 (N, state_dim): what set_state / replay restores."""

    def header(self) -> dict[str, Any]:
        """The JSON-able description of this env (module docstring)."""

    def render(self) -> Any:
        """uint8 (N, H, W, 3) frames for render_mode, or None without one."""

    def close(self) -> None:
        """Release the envs; safe to call twice."""
