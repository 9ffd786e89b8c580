"""A dead worker's error says why it died (issue 32 item 11): a fatal signal names the
signal and the worker's innermost Python frame, a SIGKILL says it left no fault trace and
that the kernel's OOM killer ended nothing."""
from __future__ import annotations

import os
import signal
import time

import pytest
import torch

from robosim.distributed import RayVecEnv, WorkerLostError
from robosim.distributed.errors import last_words_path

from .conftest import WORKER_CPUS

pytestmark = pytest.mark.slow   # every test here starts Ray workers

N, K = 2, 2


def _venv(**kwargs):
    venv = RayVecEnv("PickCube-v1", N, K, worker_cpus=WORKER_CPUS, max_restarts=0, max_episode_steps=20, **kwargs)
    venv.reset(seed=0)
    return venv


def _dead(pid: int) -> None:
    """Wait (at most 30 s) until process `pid` is gone: the signal has been handled."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"worker {pid} did not die")


def test_fatal_signal_is_named_with_the_workers_frame(local_ray):
    venv = _venv()
    try:
        pid = venv.worker_pids[1]
        assert os.path.exists(last_words_path(pid))
        os.kill(pid, signal.SIGSEGV)
        _dead(pid)
        with pytest.raises(WorkerLostError, match=r"worker 1 \(envs 1-1\) on .* died and Ray will not restart it "
                                                  r"\(max_restarts=0, used 0\): fatal signal \(Segmentation fault\)"
                                                  r" in \w+ \(.*:\d+\).*Ray: exit type SYSTEM_ERROR"):
            venv.step(torch.zeros(N, venv.single_action_space.shape[0]))
        assert not os.path.exists(last_words_path(pid))   # read once, then removed
    finally:
        venv.close()


def test_sigkill_during_a_call_says_no_fault_trace(local_ray):
    venv = _venv(render_mode="rgb_array")
    try:
        pid = venv.worker_pids[0]
        os.kill(pid, signal.SIGKILL)
        _dead(pid)
        with pytest.raises(WorkerLostError, match=r"worker 0 \(envs 0-0\) on .* died during render\(\): ended without "
                                                  r"a fault trace \(SIGKILL or os._exit.*not the kernel's "
                                                  r"out-of-memory killer"):
            venv.render()
    finally:
        venv.close()
    assert not os.path.exists(last_words_path(venv.worker_pids[1]))   # close removes the live workers' files

