"""EpisodeTracker: the one place that keeps per-env episode bookkeeping (return, length,
success/fail seen, discounted return, which rows are real transitions) for every
consumer: BatchedVectorEnv's episode metrics, EpisodeStatistics, NormalizeVecEnv and
robosim.rollout's collector. The shape of Brax's EpisodeWrapper, as an explicit object.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from gymnasium.vector import AutoresetMode


@dataclass
class EpisodeStep:
    """What one vector step meant for the episodes, all (N,) on the tracker's device.

    moved: bool, the env took a real transition (False for the NEXT_STEP step that only
    resets an env). done: bool, the episode ended on this step. discounted_returns:
    float64 sum of gamma^k r over the episode so far, this step included. finished: the metrics of
    the episodes that ended (rows outside `done` hold running values), or None when no
    episode ended: "r"/"return" float64 return, "l"/"episode_len" int64 length in steps,
    "reward" float64 mean reward per step, and when the env reports them
    "success_once"/"fail_once" (any step) and "success_at_end"/"fail_at_end" (last step).
    flags_once: with `finished`, for each flag passed to on_step, bool (N,): true at any
    step of the episode (rows outside `done`: so far); {} otherwise."""

    moved: torch.Tensor
    done: torch.Tensor
    finished: dict[str, torch.Tensor] | None
    discounted_returns: torch.Tensor
    flags_once: dict[str, torch.Tensor]


class EpisodeTracker:
    """Per-env running return (float64), length (int64), success/fail seen (bool) and
    discounted return (float64, `gamma`) of N envs under one autoreset mode.

    Call `on_reset(rows)` after a reset of the bool (N,) `rows`, and `on_step(...)`
    after every vector step. In NEXT_STEP mode the step after an episode ends is the
    env's reset and counts toward no episode; the tracker knows which rows those are."""

    def __init__(self, num_envs: int, device: str | torch.device = "cpu",
                 autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP, gamma: float = 0.99):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be a number in [0, 1], got {gamma!r}")
        self.num_envs, self.device = num_envs, torch.device(device)
        self.autoreset_mode, self.gamma = autoreset_mode, float(gamma)
        n, dev = num_envs, self.device
        self.returns = torch.zeros(n, dtype=torch.float64, device=dev)
        self.discounted_returns = torch.zeros(n, dtype=torch.float64, device=dev)
        self.lengths = torch.zeros(n, dtype=torch.int64, device=dev)
        self.success_once = torch.zeros(n, dtype=torch.bool, device=dev)
        self.fail_once = torch.zeros(n, dtype=torch.bool, device=dev)
        self.fault_once = torch.zeros(n, dtype=torch.bool, device=dev)   # info["sim_fault"] seen
        self.flags_once: dict[str, torch.Tensor] = {}   # on_step's flags, each seen this episode
        # NEXT_STEP: the env's episode ended on the last step, so this step only resets it
        self.pending_reset = torch.zeros(n, dtype=torch.bool, device=dev)

    def on_reset(self, rows: torch.Tensor) -> None:
        """The envs in bool (N,) `rows` start a new episode."""
        rows = rows.to(self.device)  # masked_fill_: no device-to-host sync on CUDA
        self.returns.masked_fill_(rows, 0.0)
        self.discounted_returns.masked_fill_(rows, 0.0)
        self.lengths.masked_fill_(rows, 0)
        self.success_once.masked_fill_(rows, False)
        self.fail_once.masked_fill_(rows, False)
        self.fault_once.masked_fill_(rows, False)
        for seen in self.flags_once.values():
            seen.masked_fill_(rows, False)
        self.pending_reset.masked_fill_(rows, False)

    def transition_rows(self) -> torch.Tensor:
        """bool (N,): the envs whose next step is a real transition (not a NEXT_STEP reset)."""
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return ~self.pending_reset
        return torch.ones(self.num_envs, dtype=torch.bool, device=self.device)

    def on_step(self, reward: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor,
                success: torch.Tensor | None = None, fail: torch.Tensor | None = None,
                always_metrics: bool = False, fault: torch.Tensor | None = None,
                flags: dict[str, torch.Tensor] | None = None) -> EpisodeStep:
        """Account one vector step: reward float (N,), terminated/truncated bool (N,),
        success/fail bool (N,) of the step just taken (the ending step's values for
        envs that ended, also in SAME_STEP mode) or None when the env has none.
        always_metrics: fill `finished` on every step (rows outside `done` hold running
        values) instead of asking whether any episode ended, a device sync on CUDA.
        fault: bool (N,) the env reported a simulation fault (info["sim_fault"] > 0).
        flags: name -> bool (N,) of this step (a task's stages), each tracked like success."""
        moved = self.transition_rows()
        done = (terminated | truncated).to(self.device)
        reward = reward.to(self.device, torch.float64)
        self.returns += torch.where(moved, reward, 0.0)
        self.discounted_returns = torch.where(moved, self.discounted_returns * self.gamma + reward,
                                              self.discounted_returns)
        self.lengths += moved.long()
        finished, discounted = None, self.discounted_returns.clone()
        if success is not None:
            self.success_once |= success.to(self.device, torch.bool) & moved
        if fail is not None:
            self.fail_once |= fail.to(self.device, torch.bool) & moved
        if fault is not None:
            self.fault_once |= fault.to(self.device, torch.bool) & moved
        for key, value in (flags or {}).items():
            seen = self.flags_once.setdefault(key, torch.zeros(self.num_envs, dtype=torch.bool, device=self.device))
            seen |= value.to(self.device, torch.bool) & moved
        flags_once = {}
        if always_metrics or bool(done.any()):
            finished = self._metrics(done, success, fail, fault is not None)
            flags_once = {key: seen.clone() for key, seen in self.flags_once.items()}
        self.on_reset(done)
        self.pending_reset = done.clone() if self.autoreset_mode == AutoresetMode.NEXT_STEP else done & False
        return EpisodeStep(moved=moved, done=done, finished=finished, discounted_returns=discounted,
                           flags_once=flags_once)

    def _metrics(self, done: torch.Tensor, success: Any, fail: Any, faults: bool = False) -> dict[str, torch.Tensor]:
        returns, lengths = self.returns.clone(), self.lengths.clone()
        out = {"r": returns, "l": lengths, "return": returns, "episode_len": lengths,
               "reward": returns / lengths.clamp(min=1)}
        if success is not None:
            out["success_once"] = self.success_once.clone()
            out["success_at_end"] = success.to(self.device, torch.bool) & done
        if fail is not None:
            out["fail_once"] = self.fail_once.clone()
            out["fail_at_end"] = fail.to(self.device, torch.bool) & done
        if faults:
            out["sim_fault_once"] = self.fault_once.clone()
        return out
