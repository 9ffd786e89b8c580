"""The seeding contract across shardings: global env i is seeded seed + i whatever K is.

K = 1 is robosim's single-process vector env; K = 2 and 3 are RayVecEnvs over the same
6 envs (shards 3+3 and 2+2+2). One schedule for all: a seeded reset, 200 steps of
seeded random actions, 8-step episodes (NEXT_STEP autoresets) and a partial
reset of two envs (on different workers) every 9 steps.
- physics_isolation="separate" (one PhysX system per env, where one process
  guarantees whole trajectories): every output of every step is bit-identical for
  K = 1, 2, 3.
- the default shared PhysX scene: initial states of every episode are bit-identical;
  whole trajectories are bit-identical where the shard structure is the same: shard k
  of a RayVecEnv steps exactly like a one-process env of its size seeded seed + start.
"""
from __future__ import annotations

import pytest
import torch
from gymnasium.vector import AutoresetMode

from robosim.distributed import RayVecEnv
from robosim.vector import make_vec

from .conftest import WORKER_CPUS, assert_same_tree

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers

N, STEPS, MAX_STEPS, SEED = 6, 200, 8, 100


def schedule(venv, env_rows: slice = slice(0, N)):
    """Run the fixed schedule on `venv`, which holds the global envs `env_rows` (all N,
    or one shard's for a one-process stand-in). Returns [(started, output)] for every
    reset and step call that touched its envs; started: bool rows of new episodes."""
    gen = torch.Generator().manual_seed(5)
    low, high = torch.tensor(venv.single_action_space.low), torch.tensor(venv.single_action_space.high)
    n = env_rows.stop - env_rows.start
    assert venv.num_envs == n
    out = venv.reset(seed=list(range(SEED + env_rows.start, SEED + env_rows.stop)))
    records = [(torch.ones(n, dtype=torch.bool), out)]
    for t in range(1, STEPS + 1):
        if t % 9 == 0:
            idx = torch.tensor([(t // 9) % N, (t // 9 + 3) % N])
            local = idx[(idx >= env_rows.start) & (idx < env_rows.stop)] - env_rows.start
            if len(local):
                started = torch.zeros(n, dtype=torch.bool)
                started[local] = True
                records.append((started, venv.reset(options={"env_idx": local})))
        action = (low + (high - low) * torch.rand((N, len(low)), generator=gen))[env_rows]
        out = venv.step(action)
        records.append((out[-1]["elapsed_steps"] == 0, out))
    return records


def initial_states(records):
    """{(env, episode number): obs row at the episode's start}."""
    starts, count = {}, [0] * N
    for started, out in records:
        for i in started.nonzero().flatten().tolist():
            starts[(i, count[i])] = out[0][i].clone()
            count[i] += 1
    return starts


def ray_env(workers, **kwargs):
    return RayVecEnv("PickCube-v1", N, workers, autoreset_mode=AutoresetMode.NEXT_STEP, worker_cpus=WORKER_CPUS,
                     max_episode_steps=MAX_STEPS, **kwargs)


def test_isolated_physics_gives_bit_identical_runs_for_k_1_2_3(local_ray):
    one = make_vec("PickCube-v1", num_envs=N, max_episode_steps=MAX_STEPS, physics_isolation="separate")
    reference = schedule(one)
    one.close()
    for workers in (2, 3):
        venv = ray_env(workers, physics_isolation="separate")
        runs = schedule(venv)
        venv.close()
        assert len(runs) == len(reference)
        for t, ((_, got), (_, want)) in enumerate(zip(runs, reference)):
            assert_same_tree(got, want, f"K={workers} call {t}")


def test_shared_physics_gives_bit_identical_initial_states_and_per_shard_trajectories(local_ray):
    one = make_vec("PickCube-v1", num_envs=N, max_episode_steps=MAX_STEPS)
    reference = initial_states(schedule(one))
    one.close()
    assert len(reference) > 4 * N  # the schedule starts many episodes per env
    for workers, size in ((2, 3), (3, 2)):
        venv = ray_env(workers)
        runs = schedule(venv)
        venv.close()
        starts = initial_states(runs)
        common = sorted(set(starts) & set(reference))
        assert len(common) >= 0.9 * len(reference)
        for key in common:
            assert torch.equal(starts[key], reference[key]), f"K={workers} env {key[0]} episode {key[1]}"
        # shard k == a one-process env of the same size, seeded seed + start: bit-exact
        for k in range(workers):
            rows = slice(k * size, (k + 1) * size)
            solo = make_vec("PickCube-v1", num_envs=size, max_episode_steps=MAX_STEPS)
            solo_runs = schedule(solo, rows)
            solo.close()
            sharded = [(started[rows], out) for started, out in runs if len(out) == 5 or started[rows].any()]
            assert len(sharded) == len(solo_runs)
            for t, ((_, got), (_, want)) in enumerate(zip(sharded, solo_runs)):
                assert_same_tree(_rows(got, rows), _rows(want, slice(0, size)), f"K={workers} shard {k} call {t}")


def _rows(out, rows):
    """The rows `rows` of every batched entry. Left out: non-batched entries and info
    keys held by none of these rows (a key such as "episode" is present when any env of
    the whole batch ended; its `_key` mask says whose rows hold it)."""
    def cut(x):
        if isinstance(x, dict):
            held = {k for k in x if isinstance(x.get(f"_{k}"), torch.Tensor) and not x[f"_{k}"][rows].any()}
            return {k: cut(v) for k, v in x.items()
                    if isinstance(v, (dict, torch.Tensor)) and k not in held and k.removeprefix("_") not in held}
        return x[rows]
    return tuple(cut(x) for x in out)
