"""Make docs/rendering.md's pictures from real renders (lavapipe works; no GPU needed).

    .venv/bin/python examples/render_lod_images.py [--out docs/images]

Writes
  render_lod.png        the same PickCube state at full detail (135k visual triangles)
                        and with render LOD (~15k), human view and the 128x128 sensor view
  eval_video_frame.png  a frame read back from an mp4 written by RecordEpisode (2x2 envs,
                        scripted policy, per-tile overlays)
"""
from __future__ import annotations

import argparse
import os
import tempfile

import imageio.v2 as imageio
import numpy as np
import torch

import robosim
from robosim.record import RecordEpisode
from robosim.record.evaluate import evaluate
from robosim.record.policies import scripted
from robosim.sensors.tiling import draw_text, hstack_padded

VIEW = dict(width=256, height=256, target_position=(-0.25, 0.0, 0.25), distance=1.0, yaw=200.0, pitch=-25.0)


def lod_comparison() -> np.ndarray:
    rows = []
    for level in ("full", "low"):
        env = robosim.make("PickCube-v1", num_envs=1, obs_mode="rgb", render_mode="rgb_array",
                           render_camera=VIEW, render_lod=level)
        try:
            env.reset(seed=1)
            policy = env.task.solution_policy()
            for _ in range(12):                      # reach down to the cube
                obs, *_ = env.step(policy())
            human = env.render().numpy()
            sensor = obs["sensor_data"]["base_camera"]["rgb"].numpy()
            sensor = sensor.repeat(2, axis=1).repeat(2, axis=2)   # 128 -> 256 for the page
            stats = env.cameras.lod_stats or {"triangles_after": 135548}
            label = f"{level}: {stats['triangles_after'] / 1000:.1f}k triangles"
            row = hstack_padded([human, sensor])[0]
            rows.append(draw_text(row, [label]))
        finally:
            env.close()
    pad = np.full((2, rows[0].shape[1], 3), 32, np.uint8)
    return np.concatenate([rows[0], pad, rows[1]])


def video_frame(tmp: str) -> np.ndarray:
    path = os.path.join(tmp, "eval.mp4")
    env = robosim.make("PickCube-v1", num_envs=4, render_mode="rgb_array",
                       render_camera={**VIEW, "width": 160, "height": 160})
    with RecordEpisode(env, video=path) as recorder:
        evaluate(recorder, scripted(recorder), episodes=4, seed=0)
    frames = [f for f in imageio.get_reader(path)]
    return frames[min(24, len(frames) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "images"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    imageio.imwrite(os.path.join(args.out, "render_lod.png"), lod_comparison())
    with tempfile.TemporaryDirectory() as tmp:
        imageio.imwrite(os.path.join(args.out, "eval_video_frame.png"), video_frame(tmp))
    for name in ("render_lod.png", "eval_video_frame.png"):
        path = os.path.join(args.out, name)
        print(f"{path}: {os.path.getsize(path) / 1024:.0f} KB")


if __name__ == "__main__":
    main()
