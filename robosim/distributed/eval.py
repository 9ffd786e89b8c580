"""`robosim eval --workers K`: policy evaluation with the envs spread over Ray workers.

The driver runs the same pieces as a single-process `robosim eval`: robosim.record's
`evaluate` (episode counting and seeding: env i's first episode gets seed + i, later
ones the next free seed in the order episodes end) and `RecordEpisode` (the mp4 of all
N envs tiled, the HDF5 trajectory), both writing their files on the driver,
atomically. They drive a ShardedEvalEnv: the batched env calls they make, answered by
K workers, each holding one shard of the N envs and its own policy built by the
policy factory on that shard (the scripted policy reads its simulator, so it must run
there). Per step, one call asks every worker for its policy's actions, one steps them
with exactly those actions and brings back success, elapsed steps and, when
recording, frames and states.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from robosim.distributed.cluster import check_capacity, connect
from robosim.distributed.pool import WorkerPool
from robosim.distributed.sharding import split_envs
from robosim.distributed.worker import EvalShardWorker
from robosim.envs import checks


class ShardedEvalEnv:
    """A robosim.envs.protocol.BatchedEnv (what `evaluate` and `RecordEpisode` use) over
    K workers; its `header()` joins the workers' real envs' headers.

    reset/step return obs=None (the policies run in the workers); info holds
    "success" bool (N,). `elapsed_steps` int32 (N,), `render()` uint8 (N, H, W, 3) and
    `get_state()` float32 (N, S) are the values brought back by the last reset/step
    (a partial reset leaves the other workers' rows as they were)."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "sensors"]}

    def __init__(self, task_id: str, num_envs: int, workers: int, policy: str, frames: bool = False,
                 states: bool = False, ray_address: str | None = None, worker_cpus: float = 1.0,
                 connect_timeout_s: float = 10.0, **env_kwargs: Any):
        from robosim.envs import EnvSpec

        for name, value in (("num_envs", num_envs), ("workers", workers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if workers > num_envs:
            raise ValueError(f"workers must be <= num_envs ({num_envs}): every worker needs an env, "
                             f"got workers={workers}")
        # every make() argument refused before Ray is reached
        spec = EnvSpec.from_kwargs(task_id, num_envs=num_envs, **env_kwargs).to_dict()
        connect(ray_address, connect_timeout_s)
        check_capacity(workers, worker_cpus)
        self.num_envs = num_envs
        self.shards = split_envs(num_envs, workers)
        self.pool = WorkerPool(EvalShardWorker, self.shards,
                               [(s, spec, policy, frames, states) for s in self.shards],
                               num_cpus=worker_cpus, max_restarts=0)
        try:
            built = self.pool.call("build", {k: () for k in range(workers)})
        except BaseException:
            self.pool.close()
            raise
        for k, info in built.items():   # where the workers are (messages, their trace files at close)
            self.pool.identities[k] = {key: info[key] for key in ("pid", "host", "node_id")}
        first = built[0]
        self._mirror_header([built[k]["header"] for k in range(workers)])
        self.single_action_space = first["single_action_space"]
        self.single_observation_space = first["single_observation_space"]
        self.render_mode = first["render_mode"]
        self.device = torch.device("cpu")
        self.elapsed_steps = torch.zeros(num_envs, dtype=torch.int32)
        self._success = torch.zeros(num_envs, dtype=torch.bool)
        self._frames: list[np.ndarray | None] = [None] * workers
        self._states: list[np.ndarray | None] = [None] * workers

    def _mirror_header(self, headers: list[dict]) -> None:
        """Join the headers the workers' real envs produced (BaseEnv.header): worker 0's,
        with num_envs N and the per-env build seeds joined in global env order."""
        header = copy.deepcopy(headers[0])
        seeds = [h["env_spec"].get("seed") for h in headers]
        header["env_spec"]["seed"] = ([s for part in seeds for s in part]
                                      if all(isinstance(p, list) for p in seeds) else None)
        header["env_spec"]["num_envs"] = header["num_envs"] = self.num_envs
        self._header = header

    @property
    def build_seeds(self) -> list[int] | None:
        """Per-env seeds the workers' builds used, in global env order (None: unknown)."""
        return copy.copy(self._header["env_spec"]["seed"])

    def header(self) -> dict[str, Any]:
        """How to rebuild these N envs in one process (robosim.envs.protocol), JSON-able."""
        return copy.deepcopy(self._header)

    def reset(self, *, seed: Any = None, options: dict | None = None):
        """BaseEnv.reset's arguments: seed int (env i: seed + i) or one per reset env;
        options {"env_idx": idx} or None. Returns (None, {"success": (N,)})."""
        options = options or {}
        if set(options) - {"env_idx"}:
            raise ValueError(f"options keys must be among ['env_idx'], got {sorted(options)}")
        env_idx = (torch.arange(self.num_envs) if options.get("env_idx") is None else
                   checks.to_env_index("options['env_idx']", options["env_idx"], self.num_envs, torch.device("cpu")))
        seeds = checks.to_seeds("seed", seed, env_idx)
        args = {}
        for k, s in enumerate(self.shards):
            rows = ((env_idx >= s.start) & (env_idx < s.stop)).nonzero().flatten()
            if len(rows):
                local = (env_idx[rows] - s.start).tolist()
                args[k] = (None if seeds is None else [seeds[r] for r in rows.tolist()],
                           None if options.get("env_idx") is None else local)
        self._absorb(self.pool.call("reset", args))
        return None, {"success": self._success.clone()}

    def act(self) -> torch.Tensor:
        """float32 (N, A): every worker's policy's actions for its current obs."""
        actions = self.pool.call("act", {k: () for k in range(len(self.shards))})
        return torch.from_numpy(np.concatenate([actions[k] for k in range(len(self.shards))]))

    def step(self, action: Any):
        """Step every worker with its rows of float (N, A) `action`. Returns (None,
        reward (N,), terminated (N,), truncated (N,), {"success": (N,)})."""
        action = checks.to_float_tensor("action", action, (self.num_envs, *self.single_action_space.shape),
                                        torch.device("cpu")).numpy()
        out = self.pool.call("step", {k: (action[s.start:s.stop],) for k, s in enumerate(self.shards)})
        self._absorb(out)
        cat = lambda key: torch.from_numpy(np.concatenate([out[k][key] for k in range(len(self.shards))]))  # noqa: E731
        return None, cat("reward"), cat("terminated"), cat("truncated"), {"success": self._success.clone()}

    def _absorb(self, reports: dict[int, dict]) -> None:
        for k, rep in reports.items():
            s = self.shards[k]
            self._success[s.start:s.stop] = torch.tensor(rep["success"])
            self.elapsed_steps[s.start:s.stop] = torch.tensor(rep["elapsed_steps"])
            self._frames[k] = rep.get("frames")
            self._states[k] = rep.get("state")

    def render(self) -> np.ndarray:
        return np.concatenate(self._frames)

    def get_state(self) -> torch.Tensor:
        return torch.from_numpy(np.concatenate(self._states))

    def close(self) -> None:
        self.pool.close()


def evaluate_on_workers(task_id: str, policy: str, episodes: int, num_envs: int, workers: int, seed: int = 0,
                        video: str | None = None, trajectory: str | None = None, ray_address: str | None = None,
                        worker_cpus: float = 1.0, progress: bool = False, build_seed: int | None = None,
                        **env_kwargs: Any):
    """Evaluate `policy` ("module:callable") for `episodes` episodes on num_envs envs
    spread over `workers` Ray workers; optional mp4/HDF5 written on the driver.
    build_seed: robosim.make's `seed` (env i's first build is seeded build_seed + i).
    Returns robosim.record.evaluate.EvalResult (episodes in the order they ended)."""
    from robosim.record.evaluate import evaluate, load_policy_factory
    from robosim.record.wrapper import RecordEpisode

    load_policy_factory(policy)  # a bad spec fails here, before any worker starts
    if build_seed is not None:
        env_kwargs["seed"] = build_seed
    if video is not None:
        env_kwargs.setdefault("render_mode", "rgb_array")
    env = ShardedEvalEnv(task_id, num_envs, workers, policy, frames=video is not None,
                         states=trajectory is not None, ray_address=ray_address, worker_cpus=worker_cpus,
                         **env_kwargs)
    recorder = env
    if video or trajectory:
        try:
            recorder = RecordEpisode(env, video=video, trajectory=trajectory)
        except BaseException:
            env.close()
            raise
    try:
        return evaluate(recorder, lambda obs: env.act(), episodes, seed=seed, progress=progress)
    finally:
        recorder.close()

