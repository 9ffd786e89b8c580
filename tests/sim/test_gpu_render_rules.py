"""SAPIEN's batched-render rules on the emulated GPU backend, and robosim's visual events
and view changes under them (issue 33).

Once SAPIEN's RenderSystemGroup exists it moves only the render shapes and cameras that
have a pose row; fixed cameras, intrinsics, lights and colours stay as they were
(docs/gpu.md lists each rule with its source line). The emulation must show the same,
or CI cannot see what physx_cuda would silently drop; physx_cpu, which renders each
scene itself, is the control: there every change shows. robosim then either makes a
visual event work under those rules (fixed cameras on mount rows) or refuses it at make.
"""
from __future__ import annotations

import os

import pytest
import sapien
import torch

import robosim

N = 2
SIZE = {"width": 64, "height": 64}
EMU = dict(sim_backend="physx_gpu_emulated", sim_device=os.environ.get("ROBOSIM_TEST_SIM_DEVICE", "cpu"))
CPU = dict(physics_isolation="separate")     # sub-scenes at the origin, like the GPU backends


def _make(backend: dict, **kwargs):
    return robosim.make("PickCube-v1", num_envs=N, obs_mode="rgb", sensor_configs=SIZE, **backend, **kwargs)


def _rgb(env) -> torch.Tensor:
    return env.cameras.sensors.capture(("rgb",))["base_camera"]["rgb"].float().cpu()


def _change_after_first_render(backend: dict) -> dict[str, float]:
    """Mean |rgb| change of the sensor camera after each change made once the render
    group exists (a first capture made it), each undone before the next."""
    env = _make(backend)
    try:
        env.reset(seed=0)
        before = _rgb(env)
        changes = {}
        lights = [c for e in env.sim.sub_scenes[0].entities for c in e.components
                  if isinstance(c, sapien.render.RenderDirectionalLightComponent)]
        colors = [list(light.color) for light in lights]
        for light in lights:
            light.color = [0.05, 0.05, 0.05]
        changes["lights"] = (_rgb(env) - before).abs().mean().item()
        for light, color in zip(lights, colors):
            light.color = color
        camera = env.cameras.sensors.cameras["base_camera"][0]
        fovy = camera.fovy
        camera.set_fovy(fovy * 0.5)
        changes["fovy"] = (_rgb(env) - before).abs().mean().item()
        camera.set_fovy(fovy)
        pose = camera.entity.pose
        camera.entity.set_pose(sapien.Pose(pose.p + [0.0, 0.0, 0.1], pose.q))   # not through its mount
        changes["camera entity pose"] = (_rgb(env) - before).abs().mean().item()
        camera.entity.set_pose(pose)
        for i in range(N):
            env.task.cube.set_color(i, [0.0, 0.0, 1.0, 1.0])
        changes["cube colour"] = (_rgb(env) - before).abs().mean().item()
        return changes
    finally:
        env.close()


def test_after_the_render_group_exists_lights_intrinsics_and_fixed_cameras_stay():
    cpu, emu = _change_after_first_render(CPU), _change_after_first_render(EMU)
    for what in ("lights", "fovy", "camera entity pose", "cube colour"):
        assert cpu[what] > 0.05, f"{what}: the control (physx_cpu) shows no change ({cpu[what]})"
    for what in ("lights", "fovy", "camera entity pose"):
        assert emu[what] == 0.0, f"{what}: physx_gpu_emulated shows a change SAPIEN's batched renderer would not"
    assert emu["cube colour"] > 0.05       # materials do change there (tests/gpu/test_batched_render_rules.py)


def test_bodies_move_in_the_images_through_their_pose_rows():
    env = _make(EMU)
    try:
        env.reset(seed=0)
        before = _rgb(env)
        pose = env.task.cube.pose().clone()
        pose[:, 0] += 0.08
        env.task.cube.set_pose(pose)
        env.sim.step()
        assert (_rgb(env) - before).abs().mean().item() > 0.05
    finally:
        env.close()


def test_set_view_moves_the_human_camera_on_every_backend():
    frames = []
    for backend in (EMU, CPU):
        env = robosim.make("PickCube-v1", num_envs=N, render_mode="rgb_array", **backend)
        try:
            env.reset(seed=0)
            first = env.render().float().cpu()
            env.human_camera.set_view((0.0, 0.0, 0.1), 1.0, 90.0, -40.0)
            frames.append((first, env.render().float().cpu()))
        finally:
            env.close()
    (emu_before, emu_after), (cpu_before, cpu_after) = frames
    assert (emu_after - emu_before).abs().mean() > 1.0
    assert (emu_after - cpu_after).abs().mean() < 1.0       # the view physx_cpu shows


def test_camera_position_and_colour_events_show_as_on_cpu():
    event = {"cam": {"mode": "reset", "target": "camera:base_camera", "property": "position", "operation": "add",
                     "dist": {"uniform": [[-0.1, -0.1, -0.1], [0.1, 0.1, 0.1]]}},
             "paint": {"mode": "reset", "target": "object:cube", "property": "color",
                       "dist": {"uniform": [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]}}}
    runs = []
    for backend in (EMU, CPU):
        env = _make(backend, randomization=event)
        try:
            obs, _ = env.reset(seed=0)
            first = obs["sensor_data"]["base_camera"]["rgb"].float().cpu()
            obs, _ = env.reset(seed=1)
            second = obs["sensor_data"]["base_camera"]["rgb"].float().cpu()
            param = obs["sensor_param"]["base_camera"]["extrinsic_cv"].cpu()
            runs.append((first, second, param))
        finally:
            env.close()
    (emu_1, emu_2, emu_param), (cpu_1, cpu_2, cpu_param) = runs
    assert (emu_2 - emu_1).abs().mean() > 1.0                # the camera moved between episodes
    assert (emu_1 - cpu_1).abs().mean() < 1.0 and (emu_2 - cpu_2).abs().mean() < 1.0
    assert torch.allclose(emu_param, cpu_param, atol=1e-4)


@pytest.mark.parametrize("name, spec", [
    ("dim", {"mode": "reset", "target": "light", "property": "intensity", "dist": {"uniform": [0.2, 0.5]}}),
    ("tint", {"mode": "interval", "target": "light", "property": "color", "period_s": {"uniform": [0.1, 0.2]},
              "dist": {"uniform": [[0.2, 0.2, 0.2], [1.0, 1.0, 1.0]]}}),
    ("zoom", {"mode": "reset", "target": "camera:base_camera", "property": "fovy", "dist": {"uniform": [0.8, 1.2]}}),
])
def test_visual_events_the_batched_renderer_cannot_show_are_refused_at_make(name, spec):
    with pytest.raises(ValueError, match=rf"randomization\['{name}'\].*'{spec['property']}' in mode '{spec['mode']}'"
                                         rf".*'physx_gpu_emulated'.*modes that work there: \['reconfigure'\]"):
        _make(EMU, randomization={name: spec})


def test_the_refused_events_run_on_physx_cpu():
    events = {"dim": {"mode": "reset", "target": "light", "property": "intensity", "dist": {"uniform": [0.2, 0.5]}},
              "zoom": {"mode": "reset", "target": "camera:base_camera", "property": "fovy",
                       "dist": {"uniform": [0.8, 1.2]}}}
    env = _make(CPU, randomization=events)
    try:
        env.reset(seed=0)
    finally:
        env.close()


def test_visual_events_at_reconfigure_show_on_the_emulated_backend():
    events = {"dim": {"mode": "reconfigure", "target": "light", "property": "intensity",
                      "dist": {"uniform": [0.3, 0.4]}},
              "paint": {"mode": "reconfigure", "target": "object:cube", "property": "color",
                        "dist": {"uniform": [[0.0, 0.0, 0.9], [0.0, 0.0, 1.0]]}},
              "zoom": {"mode": "reconfigure", "target": "camera:base_camera", "property": "fovy",
                       "operation": "scale", "dist": {"uniform": [0.6, 0.7]}}}
    images = []
    for randomization in (None, events):
        env = _make(EMU, randomization=randomization)
        try:
            obs, _ = env.reset(seed=0)
            images.append(obs["sensor_data"]["base_camera"]["rgb"].float().cpu())
        finally:
            env.close()
    assert (images[1] - images[0]).abs().mean() > 5.0


WRIST = {"width": 32, "height": 32,
         "base_camera": {"mount": "panda_hand", "pose": (0.0, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0)}}


def _shift(mode: str) -> dict:
    return {"cam": {"mode": mode, "target": "camera:base_camera", "property": "position", "operation": "add",
                    "dist": {"uniform": [[0.05, 0.0, 0.0], [0.05, 0.0, 0.0]]}}}


def test_a_camera_on_a_body_moves_in_the_body_frame_and_the_body_stays():
    # on the GPU backends only at reconfigure: the offset is frozen with the camera group
    for backend, mode in ((CPU, "reset"), (EMU, "reconfigure")):
        params, states = [], []
        for randomization in (None, _shift(mode)):
            env = robosim.make("PickCube-v1", num_envs=N, obs_mode="rgb", sensor_configs=WRIST,
                               randomization=randomization, **backend)
            try:
                obs, _ = env.reset(seed=0)
                params.append(obs["sensor_param"]["base_camera"]["cam2env_gl"][:, :3, 3].cpu())
                states.append(env.get_state().cpu())
            finally:
                env.close()
        moved = (params[1] - params[0]).norm(dim=-1)
        assert torch.allclose(moved, torch.full_like(moved, 0.05), atol=1e-4), (backend, moved)
        assert torch.equal(states[0], states[1])


def test_a_camera_on_a_body_refuses_position_events_per_reset_on_gpu_backends():
    with pytest.raises(ValueError, match=r"randomization\['cam'\].*'position' in mode 'reset'.*'physx_gpu_emulated'"
                                         r".*offset from its body.*modes that work there: \['reconfigure'\]"):
        robosim.make("PickCube-v1", num_envs=N, obs_mode="rgb", sensor_configs=WRIST, randomization=_shift("reset"),
                     **EMU)
