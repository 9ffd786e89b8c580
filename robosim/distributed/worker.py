"""What runs inside a Ray worker process: one robosim batched env of one shard.

These are plain classes; robosim.distributed.pool turns them into Ray actors. Every
method returns numpy trees (one array per key, leading dim = the shard's num_envs), so
results travel through Ray's object store without per-env Python objects. Nothing
here is stepped directly by users.
"""
from __future__ import annotations

import faulthandler
import os
import socket
import time
from typing import Any

import numpy as np
import torch

from robosim.core.tree import to_numpy_tree
from robosim.distributed.errors import WorkerNotBuiltError, forget_last_words, last_words_path
from robosim.distributed.sharding import Shard


class ShardHost:
    """Builds and owns the shard's robosim env (`build()` is separate from the
    constructor so that a bad env kwarg is an ordinary remote error, and so that the
    driver controls when a restarted worker rebuilds)."""

    def __init__(self, shard: Shard, spec: dict[str, Any]):
        """spec: the whole batch's EnvSpec.to_dict(); this shard builds its slice of it."""
        self.shard, self.spec = shard, spec
        self.env = None
        # a fatal signal's trace, for the driver's WorkerLostError (errors.exit_reason)
        self._last_words = open(last_words_path(os.getpid()), "w")  # noqa: SIM115  (open for the process's life)
        faulthandler.enable(file=self._last_words)

    def identity(self) -> dict[str, Any]:
        """pid, hostname and Ray node id of this worker process."""
        import ray

        return {"pid": os.getpid(), "host": socket.gethostname(), "node_id": ray.get_runtime_context().get_node_id()}

    def _make_env(self, **changes: Any):
        from robosim.envs import EnvSpec, make_env

        if self.env is not None:
            self.env.close()
        spec = EnvSpec.from_dict(self.spec)
        if spec.physics is None and spec.physics_isolation == "shared":
            changes.setdefault("physics", self._physics_threads())
        if isinstance(spec.seed, int):   # robosim.make's build seed: global env i gets seed + i
            changes.setdefault("seed", spec.seed + self.shard.start)
        elif isinstance(spec.seed, list):   # one seed per global env: this shard's slice
            changes.setdefault("seed", spec.seed[self.shard.start:self.shard.start + self.shard.num_envs])
        self.env = make_env(spec, num_envs=self.shard.num_envs, **changes)
        return self.env

    def _physics_threads(self):
        """PhysX worker threads for the CPUs Ray reserved for this worker (robosim's own
        default counts every core of the machine, which K workers would oversubscribe):
        none below 2 CPUs or MIN_ENVS_FOR_WORKERS envs, else one per CPU, at most 4.
        Used only when the spec has no `physics` of its own."""
        import ray

        from robosim.sim import PhysicsConfig
        from robosim.sim.physics import MIN_ENVS_FOR_WORKERS

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
        threads = 0 if cpus < 2 or self.shard.num_envs < MIN_ENVS_FOR_WORKERS else min(int(cpus), 4)
        return PhysicsConfig(cpu_workers=threads)

    def _built(self):
        if self.env is None:
            raise WorkerNotBuiltError(f"{self.shard} has no env: its process was restarted")
        return self.env

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None
        forget_last_words(os.getpid())


class VecShardWorker(ShardHost):
    """The single-process vector env (robosim.vector.BatchedVectorEnv, same autoreset
    mode) of one shard. Seeds arrive as one list per shard: global env i's seed."""

    def __init__(self, shard: Shard, autoreset_mode: str, spec: dict[str, Any]):
        super().__init__(shard, spec)
        self.autoreset_mode = autoreset_mode
        self.venv = None
        self.step_seconds: list[float] = []

    def build(self) -> dict[str, Any]:
        """Build the env; returns its spaces, metadata and this worker's identity."""
        from robosim.vector import BatchedVectorEnv

        self.venv = BatchedVectorEnv(self._make_env(), self.autoreset_mode)
        meta = dict(self.venv.metadata)
        meta.pop("autoreset_mode", None)
        return {"single_observation_space": self.venv.single_observation_space,
                "single_action_space": self.venv.single_action_space, "metadata": meta,
                "render_mode": self.venv.render_mode, **self.identity()}

    def reset(self, seeds: list[int] | None, env_idx: list[int] | None, options: dict[str, Any]) -> tuple:
        """Reset all envs of the shard, or local `env_idx`; seeds has one entry per env
        of the shard (or is None). Returns numpy (obs, info) for the whole shard."""
        self._built()
        options = dict(options)
        if env_idx is not None:
            options["env_idx"] = torch.as_tensor(env_idx, dtype=torch.int64)
        return to_numpy_tree(self.venv.reset(seed=seeds, options=options or None))

    def step(self, actions: np.ndarray | None) -> tuple:
        """One vector step (autoreset included) with float32 (n, A) actions or None."""
        self._built()
        start = time.perf_counter()
        action = None if actions is None else torch.tensor(actions)  # Ray's arrays are read-only
        out = to_numpy_tree(self.venv.step(action))
        self.step_seconds.append(time.perf_counter() - start)
        return out

    def take_step_seconds(self) -> list[float]:
        """Wall seconds each step() spent inside this worker since the last call (for
        robosim.bench.distributed: the rest of a driver's step is Ray's overhead)."""
        out, self.step_seconds = self.step_seconds, []
        return out

    def recover(self, seeds: list[int] | None) -> tuple:
        """After Ray restarted this process: build, reset every env with `seeds` (one per
        env of the shard, from the driver: the old streams died with the process) and,
        except in SAME_STEP, mark every env as ended so the vector env's own rules apply
        next (NEXT_STEP resets them on the next step, DISABLED waits for reset_mask).
        Returns numpy (obs, info)."""
        from gymnasium.vector import AutoresetMode

        self.build()
        out = self.venv.reset(seed=seeds)
        if self.venv.autoreset_mode != AutoresetMode.SAME_STEP:
            # the vector env's record of "ended on the last step"; no public setter exists
            self.venv._ended[:] = True
        return to_numpy_tree(out)

    def render(self) -> np.ndarray | None:
        self._built()
        frames = self.venv.render()
        return None if frames is None else frames.detach().cpu().numpy()

    def close(self) -> None:
        self.venv = None
        super().close()


class EvalShardWorker(ShardHost):
    """One shard of `robosim eval`: the env, the policy built on it (policies such as
    the scripted one read the simulator, so they run where the simulator is) and what
    the recording needs after every reset and step: frames and/or states."""

    def __init__(self, shard: Shard, spec: dict[str, Any], policy: str, frames: bool, states: bool):
        super().__init__(shard, spec)
        self.policy_spec, self.want_frames, self.want_states = policy, frames, states
        self.policy = None
        self.obs = None

    def build(self) -> dict[str, Any]:
        """Build env and policy; returns what the driver's recorder needs to know."""
        from robosim.record.evaluate import load_policy_factory

        env = self._make_env()
        self.policy = load_policy_factory(self.policy_spec)(env)
        return {"header": env.header(), "single_action_space": env.single_action_space,
                "single_observation_space": env.single_observation_space, "render_mode": env.render_mode,
                **self.identity()}

    def reset(self, seeds: list[int] | None, env_idx: list[int] | None) -> dict[str, Any]:
        options = None if env_idx is None else {"env_idx": torch.as_tensor(env_idx, dtype=torch.int64)}
        self.obs, info = self.env.reset(seed=seeds, options=options)
        return self._report(info)

    def act(self) -> np.ndarray:
        """The policy's float32 (n, A) actions for the current obs (called once per step)."""
        action = self.policy(self.obs)
        action = action.detach().cpu() if isinstance(action, torch.Tensor) else torch.as_tensor(action)
        return action.float().numpy()

    def step(self, actions: np.ndarray) -> dict[str, Any]:
        self.obs, reward, terminated, truncated, info = self.env.step(torch.tensor(actions))
        return self._report(info, reward=reward, terminated=terminated, truncated=truncated)

    def _report(self, info: dict, **step: torch.Tensor) -> dict[str, Any]:
        out = {"success": info["success"], "elapsed_steps": self.env.elapsed_steps, **step}
        if self.want_frames:
            out["frames"] = self.env.render()
        if self.want_states:
            out["state"] = self.env.get_state()
        return to_numpy_tree(out)
