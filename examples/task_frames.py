"""Render one frame from each of the OpenDrawer-v1 and PushT-v1 tasks, mid-episode
under their scripted solutions, side by side into one PNG (the README's task picture).

    .venv/bin/python examples/task_frames.py docs/images/tasks.png [--size 320]

Each frame is the task's default human-view camera (Task.human_camera) after a fixed
number of scripted steps from seed 0, so the picture shows the task being solved.
"""
from __future__ import annotations

import argparse
import os

import imageio.v2 as imageio
import numpy as np

import robosim
import robosim_tasks.open_drawer  # noqa: F401  (registers OpenDrawer-v1 in a source tree)
import robosim_tasks.push_t  # noqa: F401  (registers PushT-v1)
from robosim.sensors.tiling import draw_text, hstack_padded

# (task, scripted steps before the frame): the handle held and the drawer half out; the
# block part of the way to its goal
SHOTS = (("OpenDrawer-v1", 28), ("PushT-v1", 24))


def task_frame(task_id: str, steps: int, size: int) -> np.ndarray:
    """uint8 (size, size, 3) human-view frame of env 0 after `steps` scripted steps."""
    env = robosim.make(task_id, num_envs=1, render_mode="rgb_array", render_size=(size, size))
    try:
        env.reset(seed=0)
        policy = env.task.solution_policy()
        for _ in range(steps):
            env.step(policy())
        frame = env.render()[0].cpu().numpy()
    finally:
        env.close()
    return draw_text(frame, [task_id])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="PNG path to write, e.g. docs/images/tasks.png")
    parser.add_argument("--size", type=int, default=320, help="frame width and height in pixels (default 320)")
    args = parser.parse_args(argv)
    if not args.out.lower().endswith(".png"):
        raise SystemExit(f"out must be a .png path, got {args.out!r}")
    picture = hstack_padded([task_frame(task_id, steps, args.size)[None] for task_id, steps in SHOTS])[0]
    directory = os.path.dirname(args.out)
    if directory:
        os.makedirs(directory, exist_ok=True)
    imageio.imwrite(args.out, picture)
    print(f"wrote {args.out} ({picture.shape[1]}x{picture.shape[0]})")


if __name__ == "__main__":
    main()
