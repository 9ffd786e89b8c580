"""Render one frame of every shipped robot (Reach-v1 at its rest pose, seed 0) and tile
them into one labelled PNG.

    .venv/bin/python examples/robot_gallery.py docs/images/robots.png [--size 256]

Each camera looks at the robot's base-to-workspace midpoint from a distance scaled
with that span (the Panda and the xArm7 stand 0.615 m from the workspace centre, the
SO-100 and the Koch 0.25 m), so the small arms are shown closer."""
from __future__ import annotations

import argparse
import os

import imageio.v2 as imageio
import numpy as np

import robosim
from robosim.agents import get_robot_spec
from robosim.sensors.tiling import draw_text, hstack_padded


def robot_frame(name: str, size: int) -> np.ndarray:
    """uint8 (size, size, 3) frame of `name` at rest in Reach-v1, labelled with its name and DOF."""
    spec = get_robot_spec(name)
    base_x = spec.base_position[0]
    # frame scaled by the base-to-workspace distance (a proxy for the arm's size)
    camera = dict(width=size, height=size, target_position=(base_x / 2, 0.0, 0.03 + 0.4 * abs(base_x)),
                  distance=0.15 + 1.6 * abs(base_x), yaw=215.0, pitch=-20.0)
    env = robosim.make("Reach-v1", num_envs=1, robot=name, render_mode="rgb_array", render_camera=camera)
    try:
        env.reset(seed=0)
        frame = env.render()[0].cpu().numpy()
    finally:
        env.close()
    grip = f"{len(spec.gripper.joints)}-joint gripper" if spec.gripper else "no gripper"
    return draw_text(frame, [name, f"{spec.arm_dof}-DOF arm, {grip}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="PNG path to write")
    parser.add_argument("--size", type=int, default=256, help="width and height of each frame (px)")
    args = parser.parse_args()
    frames = [robot_frame(name, args.size) for name in robosim.list_robots()]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    imageio.imwrite(args.out, hstack_padded([f[None] for f in frames])[0])
    print(f"wrote {args.out} ({', '.join(robosim.list_robots())})")


if __name__ == "__main__":
    main()
