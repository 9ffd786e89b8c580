"""Counter-based random streams on CUDA: bit-equal to CPU, no host synchronization."""
from __future__ import annotations

import numpy as np
import torch

from robosim.randomization import EnvRandomStreams


def _draws(device: str) -> torch.Tensor:
    s = EnvRandomStreams(64, device)
    s.seed(list(range(1000, 1064)), np.arange(64))
    rng = s.next_episode(np.arange(64))
    sub = rng.subset(torch.arange(64, device=device) % 3 == 0)
    parts = [rng.uniform(-1, 1, (3,)), rng.normal(0, 0.02, (7,)), rng.integers(0, 9, (2,)).double()]
    parts.append(torch.zeros(64, 2, device=device).index_copy(
        0, torch.nonzero(torch.arange(64, device=device) % 3 == 0).flatten(), sub.uniform(0, 1, (2,))))
    parts.append(rng.uniform(0, 1, (1,)))
    return torch.cat([p.double() for p in parts], dim=1).cpu()


def test_cuda_draws_equal_cpu_draws_bit_for_bit():
    assert torch.equal(_draws("cpu"), _draws("cuda"))


def test_episode_draws_make_no_host_sync():
    s = EnvRandomStreams(4096, "cuda")
    idx = torch.arange(4096, device="cuda")
    s.next_episode(idx).uniform(0, 1, (3,))          # warm-up (kernel loading)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        rng = s.next_episode(idx)
        out = rng.uniform(-0.1, 0.1, (2,)) + rng.normal(0, 0.02, (2,))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert out.device.type == "cuda" and out.shape == (4096, 2)


def test_snapshot_and_restore_stay_on_cuda_and_repeat_the_draws():
    def after_restore(device: str) -> tuple[torch.Tensor, torch.Tensor]:
        s = EnvRandomStreams(64, device)
        s.seed(list(range(500, 564)), np.arange(64))
        s.next_episode(np.arange(64)).uniform(0, 1, (3,))
        idx = torch.arange(0, 64, 2, device=device)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
        try:
            snap = s.snapshot()
            first = s.next_episode(idx).uniform(-1, 1, (5,))
            s.restore(snap)
            again = s.next_episode(idx).uniform(-1, 1, (5,))
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert snap.base_seeds.device.type == snap.episode.device.type == device
        return first.cpu(), again.cpu()

    first, again = after_restore("cuda")
    assert torch.equal(first, again) and torch.equal(first, after_restore("cpu")[0])
