"""Build and reconfigure time of PickCube-v1 envs at several batch sizes (CPU).

    .venv/bin/python scripts/robot_build_time.py [--robot panda] [--sizes 1,16,64,256] [--repeats 3]

Build = robosim.make(...) (scene, robot, task actors); reconfigure = reset with
options={"reconfigure": True} (the same rebuild that domain randomization pays).
Prints the median over `repeats` of each, in seconds, as a markdown table."""
from __future__ import annotations

import argparse
import statistics
import time

import robosim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="PickCube-v1")
    parser.add_argument("--robot", default=None)
    parser.add_argument("--sizes", default="1,16,64,256")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    kwargs = {} if args.robot is None else {"robot": args.robot}
    robosim.make(args.task, num_envs=1, **kwargs).close()   # imports and first parse out of the timing
    print(f"| N | build (s) | reconfigure (s) |   ({args.task}, robot {args.robot or 'default'}, "
          f"median of {args.repeats})\n|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        builds, reconfs = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            env = robosim.make(args.task, num_envs=n, **kwargs)
            builds.append(time.perf_counter() - start)
            env.reset(seed=0)
            start = time.perf_counter()
            env.reset(seed=0, options={"reconfigure": True})
            reconfs.append(time.perf_counter() - start)
            env.close()
        print(f"| {n} | {statistics.median(builds):.3f} | {statistics.median(reconfs):.3f} |", flush=True)


if __name__ == "__main__":
    main()
