"""Render one frame of 16 randomized PickObject-v1 envs as a 4 x 4 grid (the picture in docs/writing-tasks.md).

Each env has its own procedural objects (shape, size, colour, mass) and, through
declared events, its own light colour and direction and camera field of view.
Run: .venv/bin/python examples/randomized_grid.py docs/images/randomized_grid.png
"""
import sys

import imageio.v3 as iio
import numpy as np

import robosim
import robosim_tasks.pick_object  # noqa: F401

EVENTS = {
    "light_color": {"mode": "reconfigure", "target": "light", "property": "color",
                    "dist": {"uniform": [[0.35, 0.35, 0.35], [1.0, 1.0, 1.0]]}},
    "light_direction": {"mode": "reconfigure", "target": "light", "property": "direction",
                        "dist": {"uniform": [[-0.6, -0.6, -1.0], [0.6, 0.6, -0.6]]}},
    "fov": {"mode": "reset", "target": "camera:human", "property": "fovy", "dist": {"uniform": [0.8, 1.1]}},
}


def main(path: str) -> None:
    env = robosim.make("PickObject-v1", num_envs=16, seed=0, randomization=EVENTS, render_mode="rgb_array",
                       render_camera={"width": 192, "height": 192, "distance": 0.4, "yaw": 30.0, "pitch": -25.0,
                                      "target_position": (0.0, 0.0, 0.03)})
    try:
        env.reset(seed=0)
        frames = env.render().numpy()
    finally:
        env.close()
    rows = [np.concatenate(list(frames[r * 4:(r + 1) * 4]), axis=1) for r in range(4)]
    iio.imwrite(path, np.concatenate(rows, axis=0))
    print(f"wrote {path}: {frames.shape[0]} envs, {frames.shape[1]}x{frames.shape[2]} each")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "randomized_grid.png")
