"""Render one frame of every shipped robot (Reach-v1 at its rest pose, seed 0; a hand in
the first task that names it as its default robot, else the first hand task it can run)
and tile them into one labelled PNG.

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
import robosim_tasks  # noqa: F401  (registers the built-in tasks, the hands' included)
from robosim.agents import get_robot_spec
from robosim.envs.registry import get_task
from robosim.envs.task import robots_for_task
from robosim.sensors.tiling import draw_text, hstack_padded


def robot_frame(name: str, size: int) -> np.ndarray:
    """uint8 (size, size, 3) frame of `name` at rest in Reach-v1, labelled with its name and DOF."""
    spec = get_robot_spec(name)
    base_x = spec.base_position[0]
    # frame scaled by the base-to-workspace distance (a proxy for the arm's size)
    camera = dict(width=size, height=size, target_position=(base_x / 2, 0.0, 0.03 + 0.4 * abs(base_x)),
                  distance=0.15 + 1.6 * abs(base_x), yaw=215.0, pitch=-20.0)
    task = "Reach-v1"
    if spec.is_hand:   # a hand runs no arm task: its own task (or a hand task it can run), framed around it
        hands = {r for r in robosim.list_robots() if get_robot_spec(r).is_hand}
        hand_tasks = [t for t in robosim.list_tasks() if get_task(t).default_robot in hands]
        task = next((t for t in hand_tasks if get_task(t).default_robot == name), None) or next(
            t for t in hand_tasks if name in robots_for_task(get_task(t)))
        z = spec.base_position[2]
        camera.update(target_position=(0.0, 0.0, z * 0.7), distance=0.45)
    elif spec.mobile_base is not None:   # a whole mobile manipulator, about 1.1 m tall
        camera.update(target_position=(base_x, 0.0, 0.55), distance=2.2)
    env = robosim.make(task, num_envs=1, robot=name, render_mode="rgb_array", render_camera=camera)
    try:
        env.reset(seed=0)
        frame = env.render()[0].cpu().numpy()
    finally:
        env.close()
    if spec.is_hand:
        return draw_text(frame, [name, f"{spec.arm_dof}-joint hand, {len(spec.fingertip_links)} fingers"])
    grip = f"{len(spec.gripper.joints)}-joint gripper" if spec.gripper else "no gripper"
    base = ", mobile base" if spec.mobile_base else ""
    return draw_text(frame, [name, f"{spec.arm_dof}-DOF arm, {grip}{base}"])


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
