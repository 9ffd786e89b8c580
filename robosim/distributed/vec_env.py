"""RayVecEnv: one gymnasium VectorEnv whose N envs run in K Ray worker processes.

    venv = robosim.make_vec("PickCube-v1", num_envs=64, workers=4)   # or RayVecEnv(...)
    obs, info = venv.reset(seed=0)            # global env i gets seed + i, whatever K is
    venv.step_async(actions)                  # workers simulate ...
    ...                                       # ... while the driver does other work
    obs, reward, terminated, truncated, info = venv.step_wait()

Worker k runs robosim's single-process vector env (BatchedVectorEnv) over its shard
of global envs [start, stop) in the same autoreset mode; the driver validates input,
sends each worker its slice and joins the results with one torch.cat per key, so the
outputs follow the single-process contract (docs/vector.md). Every input is checked
on the driver before any worker is called, so bad input changes nothing anywhere.

A worker whose process dies (crash, SIGKILL, OOM) is restarted by Ray; its envs are
rebuilt and reset (seeded from each env's last reset seed and the restart count),
that step reports them truncated (reward 0) with info["worker_restarted"] (bool (N,),
present on that step only), and the run goes on.
NEXT_STEP and DISABLED: their obs/info rows are the last ones the driver returned;
NEXT_STEP resets them on the next step, DISABLED waits for reset_mask. SAME_STEP: the
rows are the new episodes' and final_obs/final_info hold the last returned rows.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from robosim.distributed.cluster import check_capacity, connect
from robosim.distributed.pool import WorkerPool
from robosim.distributed.sharding import (
    concat_trees,
    fill_final_keys,
    info_without_final,
    split_envs,
    to_torch_tree,
    untouched_rows_info,
)
from robosim.distributed.worker import VecShardWorker
from robosim.envs import checks
from robosim.vector import to_autoreset_mode, tree
from robosim.vector.autoreset import reset_mask_from_options


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


class RayVecEnv(gym.vector.VectorEnv):
    """gymnasium VectorEnv of `num_envs` envs of `task_id` over `workers` Ray actors.

    Outputs are CPU torch tensors laid out as robosim.vector.BatchedVectorEnv's (obs
    (N, ...), reward float32 (N,), terminated/truncated bool (N,), info of (N, ...)).
    ray_address: an existing cluster ("HEAD_IP:6379", "ray://...", "auto"); None uses
    the Ray this process is connected to, or starts a local one. worker_cpus: Ray CPUs
    reserved per worker. max_restarts: restarts Ray grants each worker process.
    env_kwargs: robosim.make's keywords, validated here as one EnvSpec before any
    worker starts; every worker builds its slice of that spec (robosim.envs.make_env)."""

    def __init__(self, task_id: str, num_envs: int, workers: int,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, ray_address: str | None = None,
                 worker_cpus: float = 1.0, max_restarts: int = 3, restart_timeout_s: float = 120.0,
                 connect_timeout_s: float = 10.0, actor_options: dict | None = None, **env_kwargs: Any):
        from robosim.envs import EnvSpec

        self.num_envs = _positive_int("num_envs", num_envs)
        # every make() argument refused before any process starts
        spec = EnvSpec.from_kwargs(task_id, num_envs=self.num_envs, **env_kwargs).to_dict()
        workers = _positive_int("workers", workers)
        if workers > self.num_envs:
            raise ValueError(f"workers must be <= num_envs ({self.num_envs}): every worker needs an env, "
                             f"got workers={workers}")
        if isinstance(worker_cpus, bool) or not isinstance(worker_cpus, (int, float)) or worker_cpus <= 0:
            raise ValueError(f"worker_cpus must be a number > 0, got {worker_cpus!r}")
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an int >= 0, got {max_restarts!r}")
        self.autoreset_mode = to_autoreset_mode(autoreset_mode)
        connect(ray_address, connect_timeout_s)
        check_capacity(workers, worker_cpus)

        self.shards = split_envs(self.num_envs, workers)
        self.pool = WorkerPool(VecShardWorker, self.shards,
                               [(s, self.autoreset_mode.value, spec) for s in self.shards],
                               num_cpus=worker_cpus, max_restarts=max_restarts,
                               restart_timeout_s=restart_timeout_s, actor_options=actor_options)
        try:
            built = self.pool.call("build", {k: () for k in range(workers)})
        except BaseException:
            self.pool.close()
            raise
        for k, info in built.items():
            self.pool.identities[k] = {key: info[key] for key in ("pid", "host", "node_id")}
        first = built[0]
        self.device = torch.device("cpu")
        self.single_observation_space = first["single_observation_space"]
        self.single_action_space = first["single_action_space"]
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**first["metadata"], "autoreset_mode": self.autoreset_mode}
        self.render_mode = first["render_mode"]
        self._ended = torch.zeros(self.num_envs, dtype=torch.bool)
        # per shard: (obs, info) the driver returned last for its rows (torch)
        self._current: list[tuple[Any, dict] | None] = [None] * workers
        self._pending: dict[int, Any] | None = None
        # per global env: the seed of its last seeded reset (None: never seeded), the root
        # of the seeds its restarted worker resets it with
        self._seeds: list[int | None] = [None] * self.num_envs

    # -- workers ------------------------------------------------------------------------
    @property
    def workers(self) -> int:
        return len(self.shards)

    @property
    def worker_pids(self) -> list[int]:
        """Process id of each worker (they change when Ray restarts one)."""
        return [ident["pid"] for ident in self.pool.identities]

    @property
    def worker_nodes(self) -> list[str]:
        """Ray node id each worker runs on."""
        return [ident["node_id"] for ident in self.pool.identities]

    @property
    def worker_restarts(self) -> list[int]:
        """How often each worker's process was restarted so far."""
        return list(self.pool.restarts)

    # -- reset ----------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """As BatchedVectorEnv.reset, in global env indices: seed int (env i: seed + i) or
        N ints; options["reset_mask"] (DISABLED) / options["env_idx"]; other options go
        to every worker's env. Returns (obs, info) for all N envs."""
        self._check_not_pending("reset")
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        options = {} if options is None else dict(options)
        mask = self._reset_mask(options)
        seeds = self._seed_list(seed)
        if mask is not None and any(c is None for c in self._current):
            raise ValueError("a partial reset (reset_mask / env_idx) needs a full reset() first")
        args = {}
        for k, s in enumerate(self.shards):
            local = None if mask is None else mask[s.start:s.stop].nonzero().flatten().tolist()
            if local == []:
                continue
            args[k] = (None if seeds is None else seeds[s.start:s.stop], local, options)
        results, lost = self.pool.gather(self.pool.submit("reset", args))
        for k in lost:  # died during reset: once restarted, reset it again
            self.pool.wait_restarted(k)
            self.pool.call("build", {k: ()})
            results.update(self.pool.call("reset", {k: args[k]}))
        fresh = {k: to_torch_tree(r) for k, r in results.items()}
        template = next(iter(fresh.values()))[1]
        parts = []
        for k, s in enumerate(self.shards):
            if k in fresh:
                self._current[k] = fresh[k]
                parts.append(fresh[k])
            else:   # not reset: its current rows, with the reset info's layout
                obs, info = self._current[k]
                parts.append((obs, untouched_rows_info(template, info, s.num_envs)))
        if mask is None:
            self._ended.zero_()
        else:
            self._ended[mask] = False
        if seeds is not None:
            for i in (range(self.num_envs) if mask is None else mask.nonzero().flatten().tolist()):
                self._seeds[i] = seeds[i]
        obs, info = concat_trees(parts)
        if lost:
            info["worker_restarted"] = self._restarted_rows(lost)
        return obs, info

    def _reset_mask(self, options: dict) -> torch.Tensor | None:
        return reset_mask_from_options(options, self.autoreset_mode, self.num_envs)

    def _seed_list(self, seed: Any) -> list[int] | None:
        """The N global seeds (env i: seed + i, or seed[i]); validated before any worker runs."""
        if isinstance(seed, (list, tuple, np.ndarray, torch.Tensor)):
            seeds = list(seed.tolist() if hasattr(seed, "tolist") else seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed list must have one entry per env ({self.num_envs}), got {len(seeds)}")
            seed = seeds
        return checks.to_seeds("seed", seed, torch.arange(self.num_envs))

    # -- step -----------------------------------------------------------------------------
    def step(self, actions: Any):
        """step_async(actions) then step_wait(): see the class and module docstrings."""
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Check `actions` (N, A) (torch or numpy float; None = no control) and send every
        worker its slice. Returns at once; the workers simulate until step_wait()."""
        self._check_not_pending("step_async")
        if any(c is None for c in self._current):
            raise ValueError("reset() must be called before the first step")
        if self.autoreset_mode == AutoresetMode.DISABLED and bool(self._ended.any()):
            raise ValueError(
                f"envs {self._ended.nonzero().squeeze(1).tolist()} ended (terminated or truncated); with "
                f"AutoresetMode.DISABLED reset them with reset(options={{'reset_mask': mask}}) before step")
        actions = self._check_actions(actions)
        args = {k: (None if actions is None else actions[s.start:s.stop],) for k, s in enumerate(self.shards)}
        self._pending = self.pool.submit("step", args)

    def step_wait(self):
        """Wait for the step sent by step_async(); returns (obs, reward, terminated,
        truncated, info) for all N envs."""
        if self._pending is None:
            raise RuntimeError("step_wait() needs a step_async() before it")
        refs, self._pending = self._pending, None
        results, lost = self.pool.gather(refs)
        parts = {k: to_torch_tree(r) for k, r in results.items()}
        for k in lost:
            parts[k] = self._recover(k)
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        if same_step and any("final_obs" in parts[k][4] for k in parts):
            parts = {k: (*p[:4], fill_final_keys(p[0], p[4])) for k, p in parts.items()}
        if lost:
            rows = self._restarted_rows(lost)
            for k, s in enumerate(self.shards):
                parts[k][4]["worker_restarted"] = rows[s.start:s.stop]
        for k, p in parts.items():
            if k not in lost:
                self._current[k] = (p[0], info_without_final(p[4]))
        obs, reward, terminated, truncated, info = concat_trees([parts[k] for k in range(self.workers)])
        if not same_step:
            self._ended = terminated | truncated
        return obs, reward, terminated, truncated, info

    def _recover(self, k: int) -> tuple:
        """Worker k's process died during the step: wait for Ray's restart, rebuild and
        reset its envs, and report them truncated (see the module docstring)."""
        self.pool.wait_restarted(k)
        new_obs, new_info = to_torch_tree(self.pool.call("recover", {k: (self._restart_seeds(k),)})[k])
        last_obs, last_info = self._current[k]
        n = self.shards[k].num_envs
        reward = torch.zeros(n, dtype=torch.float32)
        terminated, truncated = torch.zeros(n, dtype=torch.bool), torch.ones(n, dtype=torch.bool)
        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            return last_obs, reward, terminated, truncated, dict(last_info)
        self._current[k] = (new_obs, new_info)
        info = dict(new_info)
        every = torch.ones(n, dtype=torch.bool)
        info["final_obs"], info["_final_obs"] = last_obs, every
        info["final_info"], info["_final_info"] = tree.masked_info(last_info, every), every.clone()
        return new_obs, reward, terminated, truncated, info

    def _restart_seeds(self, k: int) -> list[int] | None:
        """Seeds for the envs of worker k after its r-th restart: one SeedSequence of
        (env's last reset seed, r) per env, so a run with the same seeds and the same
        restarts repeats; None (unseeded) when an env of the shard was never seeded."""
        roots = self._seeds[self.shards[k].start:self.shards[k].stop]
        if any(root is None for root in roots):
            return None
        restart = self.pool.restarts[k]
        return [int(np.random.SeedSequence([root, restart]).generate_state(1, np.uint64)[0] >> np.uint64(1))
                for root in roots]

    def _restarted_rows(self, lost: list[int]) -> torch.Tensor:
        rows = torch.zeros(self.num_envs, dtype=torch.bool)
        for k in lost:
            rows[self.shards[k].start:self.shards[k].stop] = True
        return rows

    def _check_actions(self, actions: Any) -> np.ndarray | None:
        """float32 (N, A) numpy, checked as one process checks it (shape, dtype, finite in
        every env that steps: NEXT_STEP ignores the actions of envs it resets)."""
        if actions is None:
            return None
        expected = tuple(self.action_space.shape)
        if not isinstance(actions, (torch.Tensor, np.ndarray)):
            raise TypeError(f"actions must be a torch.Tensor or numpy array of shape {expected}, "
                            f"got {type(actions).__name__}")
        if tuple(actions.shape) != expected:
            raise ValueError(f"actions must have shape {expected} (num_envs={self.num_envs}), "
                             f"got {tuple(actions.shape)}")
        values = torch.as_tensor(actions.detach().cpu() if isinstance(actions, torch.Tensor) else actions)
        if not values.dtype.is_floating_point:
            raise ValueError(f"action must have a floating dtype (float32 expected), got {values.dtype}")
        values = values.to(torch.float32)
        stepping = ~self._ended if self.autoreset_mode == AutoresetMode.NEXT_STEP else torch.ones_like(self._ended)
        bad = ~torch.isfinite(values) & stepping.unsqueeze(1)
        if bool(bad.any()):
            raise ValueError(f"action must be finite, got NaN/inf at index {bad.nonzero()[0].tolist()}")
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and bool(self._ended.any()):
            values = torch.where(self._ended.unsqueeze(1), torch.zeros_like(values), values)
        return np.ascontiguousarray(values.numpy())

    def _check_not_pending(self, what: str) -> None:
        if self._pending is not None:
            raise RuntimeError(f"{what}() called while a step_async() awaits its step_wait()")

    # -- render / close ---------------------------------------------------------------------
    def render(self) -> torch.Tensor | None:
        """uint8 (N, H, W, 3) frames of every env (render_mode="rgb_array"), else None."""
        if self.render_mode is None:
            return None
        frames = self.pool.call("render", {k: () for k in range(self.workers)})
        return torch.from_numpy(np.concatenate([frames[k] for k in range(self.workers)]))

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the workers (the Ray connection stays up for other users)."""
        if self._pending is not None:
            self._pending = None
        self.pool.close()

    def __repr__(self) -> str:
        return f"RayVecEnv(num_envs={self.num_envs}, workers={self.workers}, {self.autoreset_mode})"
