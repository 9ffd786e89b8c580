"""Cost of one RLPD critic update (examples/rlpd.py) against ensemble size and torch threads,
with the shapes of PushCube-v1 (flat obs and action dims as given), on this machine.

    python examples/results/rlpd/profile_update.py --obs-dim 25 --act-dim 4
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import rlpd  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--obs-dim", type=int, default=25)
    p.add_argument("--act-dim", type=int, default=4)
    p.add_argument("--updates", type=int, default=30)
    a = p.parse_args()
    rows = []
    for threads in (1, os.cpu_count()):
        torch.set_num_threads(threads)
        for critics in (2, 10):
            args = rlpd.parse_args(["--demos", "unused.h5", "--critics", str(critics)])
            actor = rlpd.Actor(torch.zeros(a.obs_dim), torch.ones(a.obs_dim), -torch.ones(a.act_dim),
                               torch.ones(a.act_dim), args.hidden)
            agent = rlpd.RLPD(actor, a.obs_dim, a.act_dim, args)
            gen = torch.Generator().manual_seed(0)
            batch = (torch.randn(256, a.obs_dim), torch.rand(256, a.act_dim) * 2 - 1, -torch.rand(256),
                     torch.randn(256, a.obs_dim), torch.zeros(256))
            agent.update_critics(batch, gen)
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(a.updates):
                agent.update_critics(batch, gen)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            rows.append({"threads": threads, "critics": critics, "update_ms": round(1e3 * wall / a.updates, 2),
                         "update_cpu_ms": round(1e3 * cpu / a.updates, 2)})
            print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
