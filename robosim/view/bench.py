"""What watching costs: env-steps/s of a batch stepped with a viewer attached (update()
after every step, at most `hz` pushes per second) against the same env without one.

PickCube envs (pd_ee_delta_pose, state obs, a render world so the viewer has meshes)
step with seeded random actions; the two variants alternate block by block on the same
env so machine noise hits both alike. A browser stand-in (a websocket client in another
process, reading every message) is connected, so the server really sends the frames.
Reported: the median env-steps/s of each variant and their ratio, the same per second of
this process's CPU time (all its threads, viser's included: steadier than wall time on
a machine shared with other jobs), and the median wall time of one pushed update.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

import torch
from tqdm import tqdm

from robosim.view.viewer import Viewer

# A browser stand-in: connects, says "ready" after the first message, then reads forever.
_DRAIN = """import sys, viser, websockets.sync.client as c
ws = c.connect(sys.argv[1], subprotocols=["viser-v" + viser.__version__], max_size=None)
ws.recv(); print("ready", flush=True)
while True:
    ws.recv()
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure_viewer_cost(task_id: str = "PickCube-v1", num_envs: int = 16, hz: float = 10.0, steps: int = 100,
                        repeats: int = 5, client: bool = True, progress: bool = True) -> dict:
    """{num_envs, hz, without, with, ratio, cpu_without, cpu_with, cpu_ratio, push_ms,
    pushes, runs, cpu_runs}: env-steps/s medians over `repeats` blocks of `steps` control
    steps per variant (each block after an untimed seeded reset), per wall second and per
    second of process CPU time, with/without, and the median ms of one pushed update."""
    from robosim.envs import make

    env = make(task_id, num_envs=num_envs, render_mode="rgb_array", render_lod="low")
    viewer = drain = None
    try:
        env.reset(seed=0)
        viewer = Viewer(env, port=_free_port(), hz=hz)
        if client:
            drain = subprocess.Popen([sys.executable, "-c", _DRAIN, f"ws://127.0.0.1:{viewer.port}"],
                                     stdout=subprocess.PIPE, text=True)
            if drain.stdout is None or drain.stdout.readline().strip() != "ready":
                raise RuntimeError("the websocket client standing in for a browser did not connect")
        gen = torch.Generator().manual_seed(0)
        low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
        actions = low + torch.rand(steps, num_envs, len(low), generator=gen) * (high - low)
        rates: dict[str, list[float]] = {"without": [], "with": []}
        cpu_rates: dict[str, list[float]] = {"without": [], "with": []}
        push_s: list[float] = []
        bar = tqdm(total=2 * repeats, desc="viewer cost", disable=not progress, leave=False)
        for r in range(repeats):
            for variant in ("without", "with"):
                env.reset(seed=r)
                start, cpu = time.perf_counter(), time.process_time()
                for t in range(steps):
                    _, reward, _, _, info = env.step(actions[t])
                    if variant == "with":
                        before = time.perf_counter()
                        if viewer.update(reward, info):
                            push_s.append(time.perf_counter() - before)
                rates[variant].append(steps * num_envs / (time.perf_counter() - start))
                cpu_rates[variant].append(steps * num_envs / max(time.process_time() - cpu, 1e-9))
                bar.update(1)
        bar.close()
    finally:
        if drain is not None:
            drain.kill()
            drain.wait()
        if viewer is not None:
            viewer.close()
        env.close()
    without, with_viewer = statistics.median(rates["without"]), statistics.median(rates["with"])
    cpu_without, cpu_with = statistics.median(cpu_rates["without"]), statistics.median(cpu_rates["with"])
    return {"task_id": task_id, "num_envs": num_envs, "hz": hz, "steps": steps, "repeats": repeats,
            "client": client, "without": without, "with": with_viewer, "ratio": with_viewer / without,
            "cpu_without": cpu_without, "cpu_with": cpu_with, "cpu_ratio": cpu_with / cpu_without,
            "push_ms": 1000 * statistics.median(push_s) if push_s else float("nan"), "pushes": len(push_s),
            "runs": rates, "cpu_runs": cpu_rates}


def format_viewer_cost(row: dict) -> str:
    return "\n".join([
        f"viewer cost (env-steps/s, median; {row['task_id']} pd_ee_delta_pose, {row['num_envs']} envs, "
        f"update() every step, at most {row['hz']:g} pushes/s{', one client connected' if row['client'] else ''}):",
        f"{'N':>5} {'clock':>6} {'without':>10} {'with viewer':>12} {'with/without':>13} {'ms/push':>8}",
        f"{row['num_envs']:>5} {'wall':>6} {row['without']:>10,.0f} {row['with']:>12,.0f} {row['ratio']:>13.3f} "
        f"{row['push_ms']:>8.2f}",
        f"{row['num_envs']:>5} {'cpu':>6} {row['cpu_without']:>10,.0f} {row['cpu_with']:>12,.0f} "
        f"{row['cpu_ratio']:>13.3f}"])


def main(argv: list[str] | None = None) -> int:
    """python -m robosim.view.bench: print the viewer-cost row docs/viewer.md publishes, then its JSON."""
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m robosim.view.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="PickCube-v1", help="registered task id (default PickCube-v1)")
    p.add_argument("--num-envs", type=int, default=16, help="envs in the batch (default 16)")
    p.add_argument("--hz", type=float, default=10.0, help="most viewer pushes per second (default 10)")
    p.add_argument("--steps", type=int, default=100, help="control steps per timed block (default 100)")
    p.add_argument("--repeats", type=int, default=5, help="timed blocks per variant (default 5)")
    p.add_argument("--json", metavar="PATH", help="also write the result as JSON to PATH")
    args = p.parse_args(argv)
    for name in ("num_envs", "steps", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not args.hz > 0:
        p.error(f"--hz must be > 0, got {args.hz}")
    result = measure_viewer_cost(args.task, num_envs=args.num_envs, hz=args.hz, steps=args.steps,
                                 repeats=args.repeats)
    print(format_viewer_cost(result))
    print(json.dumps(result))
    if args.json:
        from robosim.core.atomic import write_bytes_atomic
        write_bytes_atomic(args.json, json.dumps(result, indent=1).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
