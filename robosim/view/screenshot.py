"""Screenshots of the viewer page taken by a real browser: Debian's chromium, headless,
with SwiftShader's software WebGL (no GPU or display needed).

`python -m robosim.view.screenshot OUT.png` makes the picture in the README and
docs/viewer.md: PickCube-v1 on 4 envs, 25 steps into the scripted solution; with
`--overlays`, the one of docs/viewer.md's overlays: one env at the same step with its
force arrows and camera frustum shown.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess

import numpy as np

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    """The chromium executable on PATH, or None."""
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def browser_screenshot(url: str, path: str, size: tuple[int, int] = (960, 600), wait_ms: int = 12000) -> np.ndarray:
    """Load `url` in headless chromium, give its scripts `wait_ms` of (virtual) time, save
    a `size` (width, height) PNG at `path`; returns it as uint8 (H, W, 3). RuntimeError
    when chromium is missing (scripts/setup.sh installs it) or fails."""
    import imageio.v3 as iio

    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("chromium is not installed: run `bash scripts/setup.sh` (Debian package chromium)")
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu-sandbox", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={wait_ms}",
           "--hide-scrollbars", f"--screenshot={os.path.abspath(path)}", url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not os.path.exists(path):
        raise RuntimeError(f"chromium could not screenshot {url} (exit {done.returncode}): {done.stderr[-1000:]}")
    return iio.imread(path)[..., :3]


def main() -> None:
    import robosim
    from robosim.record.policies import scripted
    from robosim.view import attach

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", help="PNG to write")
    parser.add_argument("--port", type=int, default=8097)
    parser.add_argument("--overlays", action="store_true", help="one env, force arrows and camera frustums on")
    args = parser.parse_args()
    env = robosim.make("PickCube-v1", num_envs=1 if args.overlays else 4, render_mode="rgb_array")
    try:
        obs, _ = env.reset(seed=0)
        viewer = attach(env, port=args.port)
        viewer.show_forces = viewer.show_frustums = args.overlays
        try:
            policy = scripted(env)
            for _ in range(25):
                obs, reward, _, _, info = env.step(policy(obs))
            viewer.update(reward, info, force=True)
            browser_screenshot(viewer.url, args.out)
        finally:
            viewer.close()
    finally:
        env.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
