"""A worker process killed with SIGKILL: Ray restarts it, its envs come back reset and
truncated with info["worker_restarted"], and the run goes on; past max_restarts the
driver raises WorkerLostError naming the worker."""
from __future__ import annotations

import os
import signal

import pytest
import torch
from gymnasium.vector import AutoresetMode

from robosim.distributed import RayVecEnv, WorkerLostError

from .conftest import WORKER_CPUS

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers

N, K, MAX_STEPS = 4, 2, 20


def zeros(venv):
    return torch.zeros(N, venv.single_action_space.shape[0])


def test_next_step_mode_kill_between_steps_then_restarts_run_out(local_ray):
    venv = RayVecEnv("PickCube-v1", N, K, autoreset_mode=AutoresetMode.NEXT_STEP, worker_cpus=WORKER_CPUS,
                     max_restarts=1, max_episode_steps=MAX_STEPS)
    venv.reset(seed=0)
    for _ in range(3):
        last_obs, *_ = venv.step(zeros(venv))
    killed = venv.worker_pids[1]
    os.kill(killed, signal.SIGKILL)

    obs, reward, terminated, truncated, info = venv.step(zeros(venv))
    assert info["worker_restarted"].tolist() == [False, False, True, True]
    assert truncated.tolist() == [False, False, True, True] and not terminated.any()
    assert reward[2:].eq(0).all()
    assert torch.equal(obs[2:], last_obs[2:])         # NEXT_STEP: the last rows the driver saw end the episode
    assert info["elapsed_steps"].tolist()[:2] == [4, 4]
    assert venv.worker_pids[1] != killed and venv.worker_restarts == [0, 1]

    obs, reward, terminated, truncated, info = venv.step(zeros(venv))   # the reset step of NEXT_STEP
    assert "worker_restarted" not in info
    assert info["elapsed_steps"].tolist() == [5, 5, 0, 0] and reward[2:].eq(0).all()
    for _ in range(3):
        obs, reward, terminated, truncated, info = venv.step(zeros(venv))
    assert info["elapsed_steps"].tolist() == [8, 8, 3, 3] and torch.isfinite(obs).all()

    os.kill(venv.worker_pids[1], signal.SIGKILL)   # its only restart is used up
    with pytest.raises(WorkerLostError, match=r"worker 1 \(envs 2-3\) on .* died and Ray will not restart it "
                                              r"\(max_restarts=1, used 1\)"):
        venv.step(zeros(venv))
    venv.close()


def test_same_step_mode_kill_while_the_step_is_in_flight(local_ray):
    venv = RayVecEnv("PickCube-v1", N, K, autoreset_mode=AutoresetMode.SAME_STEP, worker_cpus=WORKER_CPUS,
                     max_episode_steps=MAX_STEPS)
    venv.reset(seed=0)
    for _ in range(2):
        last_obs, *_ = venv.step(zeros(venv))
    killed = venv.worker_pids[0]
    venv.step_async(zeros(venv))
    os.kill(killed, signal.SIGKILL)
    obs, reward, terminated, truncated, info = venv.step_wait()
    steps = 3
    if "worker_restarted" not in info:
        # the worker finished this step before the signal arrived (a race the test cannot
        # order): the next step is the one that finds it dead
        last_obs = obs
        obs, reward, terminated, truncated, info = venv.step(zeros(venv))
        steps = 4
    assert info["worker_restarted"].tolist() == [True, True, False, False]
    assert truncated.tolist() == [True, True, False, False] and reward[:2].eq(0).all()
    assert info["_final_obs"].tolist() == [True, True, False, False]
    assert torch.equal(info["final_obs"][:2], last_obs[:2])     # the last rows the driver returned
    assert info["elapsed_steps"].tolist() == [0, 0, steps, steps]      # new episodes already started
    assert venv.worker_pids[0] != killed and venv.worker_restarts == [1, 0]
    for _ in range(3):
        obs, reward, terminated, truncated, info = venv.step(zeros(venv))
    assert info["elapsed_steps"].tolist() == [3, 3, steps + 3, steps + 3] and "worker_restarted" not in info
    venv.close()


def _run_with_a_kill(seed: int) -> list[torch.Tensor]:
    """reset(seed), 2 steps, SIGKILL worker 1, 4 more steps: the obs of every step."""
    venv = RayVecEnv("PickCube-v1", N, K, autoreset_mode=AutoresetMode.NEXT_STEP, worker_cpus=WORKER_CPUS,
                     max_restarts=1, max_episode_steps=MAX_STEPS)
    try:
        out = [venv.reset(seed=seed)[0]]
        out += [venv.step(zeros(venv))[0] for _ in range(2)]
        os.kill(venv.worker_pids[1], signal.SIGKILL)
        out += [venv.step(zeros(venv))[0] for _ in range(4)]
        assert venv.worker_restarts == [0, 1]
        return out
    finally:
        venv.close()


def test_a_restart_repeats_with_the_same_seeds(local_ray):
    first, second = _run_with_a_kill(3), _run_with_a_kill(3)
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    # first[4] is the restarted envs' reset step: a new episode, not the seeded first one again
    assert not torch.equal(first[4][2:], first[0][2:])
