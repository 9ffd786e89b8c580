"""Where the time of an rgb-observation step goes on this machine's renderer (lavapipe).

    .venv/bin/python scripts/render_profile.py [--num-envs 4] [--json out.json]

Part 1, PickCube-v1 with obs_mode="rgb" at 128x128 and render LOD: the whole step, the
same step with state obs, update_render of every env, the pictures taken one env at a
time or all submitted before any is read, and the uint8 conversion. Part 2: the time of
one picture at 32x32, 128x128 and 256x256 with SAPIEN's "default" shader (robosim's)
and its "minimal" one, each shader in its own process (the shader is process-global).
Medians of 5 blocks; milliseconds. Not a test: the numbers depend on the machine.
"""
from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import time

RESOLUTIONS = (32, 128, 256)


def _median_ms(fn, per_block: int, divide: int = 1) -> float:
    fn()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(per_block):
            fn()
        times.append((time.perf_counter() - start) / per_block / divide * 1e3)
    return statistics.median(times)


def _rgb_env(num_envs: int, res: int):
    import robosim

    env = robosim.make("PickCube-v1", num_envs=num_envs, obs_mode="rgb", render_lod="low",
                       sensor_configs={"width": res, "height": res})
    env.reset(seed=0)
    cameras = [c for group in env.parts.cameras.sensors.cameras.values() for c in group]
    return env, cameras


def _submit_all_then_read(cameras) -> None:
    for camera in cameras:
        camera.take_picture()
    for camera in cameras:
        camera.get_picture("Color")


def phases(num_envs: int) -> dict[str, float]:
    import numpy as np
    import torch

    import robosim
    from robosim.sensors.camera import to_uint8

    torch.set_num_threads(1)
    env, cameras = _rgb_env(num_envs, 128)
    state_env = robosim.make("PickCube-v1", num_envs=num_envs, obs_mode="state")
    state_env.reset(seed=0)
    action = torch.rand(num_envs, env.single_action_space.shape[0], generator=torch.Generator().manual_seed(0)) * 2 - 1

    def one_at_a_time():
        for camera in cameras:
            camera.take_picture()
            camera.get_picture("Color")

    pictures = [c.get_picture("Color") for c in cameras]
    return {
        "rgb step": _median_ms(lambda: env.step(action), 20),
        "state step": _median_ms(lambda: state_env.step(action), 20),
        "update_render, every env": _median_ms(lambda: [s.update_render() for s in env.parts.sim.sub_scenes], 40),
        "pictures one env at a time": _median_ms(one_at_a_time, 20),
        "pictures all submitted, then read": _median_ms(lambda: _submit_all_then_read(cameras), 20),
        "uint8 conversion + stack": _median_ms(lambda: np.stack([to_uint8(p) for p in pictures]), 40),
    }


def per_picture(shader: str) -> dict[str, float]:
    import sapien

    if shader != "default":
        sapien.render.set_camera_shader_dir(shader)
    out = {}
    for res in RESOLUTIONS:
        env, cameras = _rgb_env(4, res)
        out[f"{res}x{res}"] = _median_ms(functools.partial(_submit_all_then_read, cameras), 20, divide=len(cameras))
        env.close()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=4, help="envs of part 1 (default 4)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--shader", help=argparse.SUPPRESS)   # internal: part 2 for one shader
    args = parser.parse_args(argv)
    if args.shader:
        print(json.dumps(per_picture(args.shader)))
        return 0
    result = {"num_envs": args.num_envs, "phases_ms": phases(args.num_envs), "ms_per_picture": {}}
    print(f"PickCube-v1 rgb obs, 128x128, render LOD, {args.num_envs} envs (ms per control step)")
    for name, ms in result["phases_ms"].items():
        print(f"  {name:<36} {ms:7.2f}")
    print("one picture (ms), 4 envs, pictures submitted before reading")
    for shader in ("default", "minimal"):
        proc = subprocess.run([sys.executable, __file__, "--shader", shader], capture_output=True, text=True,
                              check=True)
        result["ms_per_picture"][shader] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"  {shader:<8} " + "  ".join(f"{k}: {v:.2f}" for k, v in result["ms_per_picture"][shader].items()))
    if args.json:
        from robosim.bench.runner import write_json_atomic

        write_json_atomic(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
