"""SAPIEN's real batched renderer against the emulation's rules (issue 33).

The emulated backend's physics (CPU PhysX, buffers on CUDA) drives either the
emulation's render group or SAPIEN's own RenderSystemGroup reading the same CUDA pose
buffer (physx_cuda's render path, without GPU PhysX). Each change made after the
render group exists must show in both or in neither: the emulation then catches in CI
what physx_cuda would silently drop. The measured changes are printed (`pytest -s`) for
docs/gpu.md.
"""
from __future__ import annotations

import sapien
import torch

import robosim
from robosim.sensors.camera import place_cameras
from robosim.sim.gpu.emulation import EmulatedGpuSystem
from robosim.sim.gpu.system import SapienGpuSystem

N = 2
SHOWN = 0.05     # mean |rgb| change (0-255) above which a change shows


def _sapien_renderer(monkeypatch) -> None:
    device = f"cuda:{torch.cuda.current_device()}"
    monkeypatch.setattr(EmulatedGpuSystem, "render_device", lambda self: device)
    monkeypatch.setattr(EmulatedGpuSystem, "render_group",
                        lambda self, scenes, poses: SapienGpuSystem.render_group(self, scenes, poses))


def _measure() -> tuple[dict[str, float], torch.Tensor]:
    """({change: mean |rgb| change}, the first sensor image) for changes made after the
    first render, each undone before the next."""
    env = robosim.make("PickCube-v1", num_envs=N, obs_mode="rgb", render_mode="rgb_array",
                       sim_backend="physx_gpu_emulated", sim_device="cuda", sensor_configs={"width": 64, "height": 64})
    try:
        env.reset(seed=0)

        def rgb() -> torch.Tensor:
            return env.cameras.sensors.capture(("rgb",))["base_camera"]["rgb"].float().cpu()

        before, human = rgb(), env.render().float().cpu()
        out = {}
        lights = [c for e in env.sim.sub_scenes[0].entities for c in e.components
                  if isinstance(c, sapien.render.RenderDirectionalLightComponent)]
        colors = [list(light.color) for light in lights]
        for light in lights:
            light.color = [0.05, 0.05, 0.05]
        out["light colour"] = (rgb() - before).abs().mean().item()
        for light, color in zip(lights, colors):
            light.color = color
        camera = env.cameras.sensors.cameras["base_camera"][0]
        fovy = camera.fovy
        camera.set_fovy(fovy * 0.5)
        out["fovy"] = (rgb() - before).abs().mean().item()
        camera.set_fovy(fovy)
        pose = camera.entity.pose
        camera.entity.set_pose(sapien.Pose(pose.p + [0.0, 0.0, 0.1], pose.q))
        out["fixed camera entity pose"] = (rgb() - before).abs().mean().item()
        camera.entity.set_pose(pose)
        place_cameras(env.sim, [camera], [sapien.Pose(pose.p + [0.0, 0.0, 0.1], pose.q)])
        out["fixed camera on its mount row"] = (rgb() - before).abs().mean().item()
        place_cameras(env.sim, [camera], [pose])
        env.human_camera.set_view((0.0, 0.0, 0.1), 1.0, 90.0, -40.0)
        out["set_view"] = (env.render().float().cpu() - human).abs().mean().item()
        for i in range(N):
            env.task.cube.set_color(i, [0.0, 0.0, 1.0, 1.0])
        out["cube colour"] = (rgb() - before).abs().mean().item()
        moved = env.task.cube.pose().clone()
        moved[:, 0] += 0.08
        env.task.cube.set_pose(moved)
        env.sim.step()
        out["cube pose row"] = (rgb() - before).abs().mean().item()
        return out, before
    finally:
        env.close()


def test_the_emulation_shows_what_sapiens_batched_renderer_shows(monkeypatch):
    emulated, emulated_first = _measure()
    _sapien_renderer(monkeypatch)
    real, real_first = _measure()
    print("\nmean |rgb| change after the render group exists (emulated vs SAPIEN's RenderSystemGroup):")
    for what in real:
        print(f"  {what}: {emulated[what]:.3f} vs {real[what]:.3f}")
    assert (emulated_first - real_first).abs().mean() < 2.0           # the same picture to start with
    for what in real:
        assert (emulated[what] > SHOWN) == (real[what] > SHOWN), (what, emulated[what], real[what])
    for what in ("fixed camera on its mount row", "set_view", "cube colour", "cube pose row"):
        assert real[what] > SHOWN, what


def test_camera_and_colour_events_show_in_sapiens_batched_renderer(monkeypatch):
    events = {"cam": {"mode": "reset", "target": "camera:base_camera", "property": "position", "operation": "add",
                      "dist": {"uniform": [[-0.1, -0.1, -0.1], [0.1, 0.1, 0.1]]}},
              "paint": {"mode": "reset", "target": "object:cube", "property": "color",
                        "dist": {"uniform": [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]}}}
    images = []
    for real in (False, True):
        if real:
            _sapien_renderer(monkeypatch)
        env = robosim.make("PickCube-v1", num_envs=N, obs_mode="rgb", sim_backend="physx_gpu_emulated",
                           sim_device="cuda", sensor_configs={"width": 64, "height": 64}, randomization=events)
        try:
            first = env.reset(seed=0)[0]["sensor_data"]["base_camera"]["rgb"].float().cpu()
            second = env.reset(seed=1)[0]["sensor_data"]["base_camera"]["rgb"].float().cpu()
            images.append((first, second))
        finally:
            env.close()
    (emu_1, emu_2), (real_1, real_2) = images
    print(f"\nevents, seed 0 -> 1: emulated {(emu_2 - emu_1).abs().mean():.3f}, "
          f"SAPIEN {(real_2 - real_1).abs().mean():.3f}")
    assert (real_2 - real_1).abs().mean() > 1.0
    assert (emu_1 - real_1).abs().mean() < 2.0 and (emu_2 - real_2).abs().mean() < 2.0
