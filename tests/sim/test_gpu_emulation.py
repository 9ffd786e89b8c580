"""The emulated GPU system (physx_gpu_emulated) keeps SAPIEN's PhysxGpuSystem rules: each
test builds a small GpuSimScene on it, breaks one rule, and checks the error or the
ignored write that SAPIEN 3.0.3 gives (docs/gpu.md lists each rule's source line)."""
from __future__ import annotations

import logging
import os

import pytest
import sapien
import torch

from robosim.sim.gpu.emulation import EmulatedGpuSystem
from robosim.sim.gpu.emulation_render import SCENE_CHANGED
from robosim.sim.gpu.scene import GpuSimScene
from robosim.sim.objects import ArticulationModel, Box, Joint, Link, RigidObject

N = 3
SIM_DEVICE = os.environ.get("ROBOSIM_TEST_SIM_DEVICE", "cpu")   # scripts/gpu_check.sh: cuda


def _scene(render: bool = False, finalize: bool = True) -> GpuSimScene:
    sim = GpuSimScene(N, 100, render=render, backend="physx_gpu_emulated", sim_device=SIM_DEVICE)
    sim.add_ground()
    sim.add_object("cube", RigidObject([Box(0.02)], pose=(0.1, 0.0, 0.02)))
    sim.add_object("wall", RigidObject([Box(0.05)], pose=(0.0, 0.3, 0.05), body="static"))
    hinge = Joint("revolute", axis=(0, 0, 1), limits=(-1.0, 1.0))
    sim.add_articulation("lever", ArticulationModel(
        [Link("base", [Box(0.03)]), Link("arm", [Box((0.1, 0.01, 0.01), pose=(0.1, 0, 0))], parent="base",
                                          joint=hinge)], pose=(-0.2, 0.0, 0.1)))
    if finalize:
        sim.finalize()
    return sim


@pytest.fixture(scope="module")
def sim():
    scene = _scene()
    yield scene
    scene.close()


def test_buffers_have_sapiens_row_layout_and_padding(sim):
    px = sim.gpu
    rigid = px.cuda_rigid_body_data.torch()
    # rows: 3 cubes (dynamic; static walls have none), then 3 levers x 2 links
    assert rigid.shape == (N + N * 2, 13)
    assert px.cuda_articulation_qpos.torch().shape == (N, 1)
    cube_rows = sim.actors["cube"].index.tolist()
    assert cube_rows == sorted(cube_rows) and max(cube_rows) < N      # bodies first
    links = sim.articulations["lever"].link_index
    assert torch.equal(links.cpu(), N + torch.arange(N)[:, None] * 2 + torch.arange(2)[None, :])


def test_a_buffer_is_stale_after_a_step_until_fetched(sim):
    sim.step()
    px = sim.gpu
    assert torch.isnan(px.cuda_rigid_body_data.torch()[:N]).all()
    assert torch.isnan(px.cuda_articulation_qpos.torch()).all()
    px.gpu_fetch_rigid_dynamic_data()
    assert torch.isfinite(px.cuda_rigid_body_data.torch()[:N]).all()
    sim.buffers.stale()


def test_an_apply_of_unfetched_rows_is_refused(sim):
    sim.step()
    with pytest.raises(RuntimeError, match="not fetched since the last step"):
        sim.gpu.gpu_apply_rigid_dynamic_data()
    with pytest.raises(RuntimeError, match="not fetched since the last step"):
        sim.gpu.gpu_apply_articulation_qpos()


def test_an_indexed_apply_writes_only_the_named_rows(sim):
    px = sim.gpu
    px.gpu_fetch_rigid_dynamic_data()
    data = px.cuda_rigid_body_data.torch()
    before = sim.actors["cube"].pose().clone()
    rows = sim.actors["cube"].index
    data[rows, 2] += 0.5                          # lift every cube in the buffer...
    px.gpu_apply_rigid_dynamic_data(rows[1:2].to(torch.int32))     # ...but push env 1's only
    sim.buffers.stale()
    sim.step()
    sim.buffers.stale()
    after = sim.actors["cube"].pose()
    assert after[1, 2] > before[1, 2] + 0.4
    assert (after[[0, 2], 2] - before[[0, 2], 2]).abs().max() < 0.01
    with pytest.raises(RuntimeError, match="int32"):
        px.gpu_apply_rigid_dynamic_data(rows[1:2])    # int64: SAPIEN checks the stride


def test_set_pose_on_an_entity_does_nothing(sim, caplog):
    view = sim.actors["cube"]
    before = view.pose().clone()
    with caplog.at_level(logging.WARNING, logger="robosim.sim.gpu.emulation"):
        view.entities[0].set_pose(view.entities[0].pose * sapien.Pose([0, 0, 1.0]))
        sim.step()
    sim.buffers.stale()
    assert "setting pose does not affect PhysX GPU simulation." in caplog.text
    assert (view.pose()[0, 2] - before[0, 2]).abs() < 0.01


def test_kinematic_toggle_after_gpu_init_is_refused():
    scene = _scene()
    try:
        scene.actors["cube"].bodies[0].kinematic = True
        with pytest.raises(RuntimeError, match="kinematic flag changed after gpu_init"):
            scene.step()
    finally:
        scene.close()


def test_nothing_runs_before_gpu_init_and_a_new_body_uninitializes():
    scene = _scene(finalize=False)
    try:
        with pytest.raises(RuntimeError, match="failed to step: gpu simulation is not initialized."):
            scene.gpu.step()
        with pytest.raises(RuntimeError, match="GPU PhysX is not initialized."):
            scene.gpu.gpu_fetch_rigid_dynamic_data()
        scene.finalize()
        scene.add_object("late", RigidObject([Box(0.02)], pose=(0.3, 0.0, 0.02)))
        with pytest.raises(RuntimeError, match="failed to step: gpu simulation is not initialized."):
            scene.step()
    finally:
        scene.close()


def test_link_poses_follow_a_qpos_write_only_after_the_kinematics_update(sim):
    px = sim.gpu
    lever = sim.articulations["lever"]
    px.gpu_fetch_articulation_qpos()
    px.gpu_fetch_articulation_link_pose()
    arm_row = lever.link_index[0, 1]
    before = px.cuda_rigid_body_data.torch()[arm_row, :7].clone()
    px.cuda_articulation_qpos.torch()[lever.index[0], 0] = 0.8
    px.gpu_apply_articulation_qpos()
    px.gpu_fetch_articulation_link_pose()
    assert torch.equal(px.cuda_rigid_body_data.torch()[arm_row, :7], before)
    px.gpu_update_articulation_kinematics()
    px.gpu_fetch_articulation_link_pose()
    assert not torch.equal(px.cuda_rigid_body_data.torch()[arm_row, :7], before)
    sim.buffers.stale()


def test_scene_offsets_are_kept_and_never_seen_in_the_buffers(sim):
    px: EmulatedGpuSystem = sim.gpu
    assert px.get_scene_offset(sim.sub_scenes[1]).tolist() == sim.scene_offsets[1].float().tolist()
    pose = sim.actors["cube"].pose()
    assert (pose[:, 0] - 0.1).abs().max() < 0.01        # every env's cube in its own sub-scene frame


def test_no_scene_change_after_the_render_group_exists():
    scene = _scene(render=True)
    try:
        scene.update_render()
        scene.sub_scenes[0].add_camera("late", 32, 32, 1.0, 0.01, 10.0)
        with pytest.raises(RuntimeError, match=SCENE_CHANGED.split(" (")[0]):
            scene.update_render()
    finally:
        scene.close()


def test_mass_and_friction_writes_are_refused_on_gpu_views(sim):
    with pytest.raises(ValueError, match="mass of 'cube' cannot change after the build on the GPU backends"):
        sim.actors["cube"].set_mass(0, 1.0, torch.ones(3).numpy())
    with pytest.raises(ValueError, match="friction and restitution of 'cube'"):
        sim.actors["cube"].set_materials(0, [(0.1, 0.1, 0.0)])
    with pytest.raises(ValueError, match="drive gains of 'lever'"):
        sim.articulations["lever"].set_drive_gains(0, [(1.0, 1.0, 1.0)])


def test_the_system_takes_the_physics_config_applied_before_it():
    # SAPIEN copies the scene config when a PhysxGpuSystem is constructed (physx_system.cpp
    # 46-47): a config applied later never reaches it; the emulation's CPU systems too
    from robosim.sim.physics import PhysicsConfig

    scene = GpuSimScene(2, 100, physics=PhysicsConfig(bounce_threshold=0.7), render=False,
                        backend="physx_gpu_emulated", sim_device=SIM_DEVICE)
    try:
        assert scene.gpu.config.bounce_threshold == pytest.approx(0.7)
        assert [s.config.bounce_threshold for s in scene.gpu.systems] == pytest.approx([0.7, 0.7])
    finally:
        scene.close()
    sapien.physx.set_scene_config(bounce_threshold=3.0)     # after construction: reaches no new sub-scene
    assert scene.gpu.sub_scene_physx().config.bounce_threshold == pytest.approx(0.7)
    sapien.physx.set_scene_config(bounce_threshold=2.0)


def test_one_ground_plane_holds_every_env(sim):
    # one PxScene on the GPU: one infinite plane (ManiSkill3 keeps one); the emulation's
    # copies for its other CPU systems are its own
    grounds = [e for s in sim.sub_scenes for e in s.entities if e.name == "ground"]
    assert len(grounds) == 1
    sim.buffers.stale()
    for _ in range(30):
        sim.step()
    z = sim.actors["cube"].pose()[:, 2]
    assert (z - 0.02).abs().max() < 2e-3, z       # every env's cube rests on the plane
    sim.buffers.stale()


def test_an_indexed_joint_apply_writes_the_first_articulations(sim):
    # SAPIEN's qpos/qvel/qf/target applies pass its own [0, A) index buffer with the
    # count n of the given indices (physx_system.cpp 866-964): rows 0..n-1 are written
    px = sim.gpu
    lever = sim.articulations["lever"]
    px.gpu_fetch_articulation_qpos()
    before = px.cuda_articulation_qpos.torch()[:, 0].clone()
    px.cuda_articulation_qpos.torch()[:, 0] = torch.tensor([0.3, 0.4, 0.5], device=before.device)
    named = lever.index[2:3].to(torch.int32)                   # names articulation 2...
    px.gpu_apply_articulation_qpos(named)
    px.gpu_fetch_articulation_qpos()
    after = px.cuda_articulation_qpos.torch()[:, 0]
    row0, row2 = int(lever.index[0]), int(lever.index[2])
    assert float(after[row0]) == pytest.approx(0.3)            # ...writes articulation 0
    assert float(after[row2]) == pytest.approx(float(before[row2]), abs=1e-6)
    sim.buffers.stale()


def test_buffer_rows_follow_creation_order_over_all_sub_scenes():
    # SAPIEN numbers rigid dynamic bodies by component creation (a set ordered by id),
    # not scene by scene: every env's "first" comes before any env's "second"
    scene = GpuSimScene(N, 100, render=False, backend="physx_gpu_emulated", sim_device=SIM_DEVICE)
    try:
        scene.add_object("first", RigidObject([Box(0.02)], pose=(0.1, 0.0, 0.02)))
        scene.add_object("second", RigidObject([Box(0.02)], pose=(-0.1, 0.0, 0.02)))
        scene.finalize()
        assert scene.actors["first"].index.tolist() == [0, 1, 2]
        assert scene.actors["second"].index.tolist() == [3, 4, 5]
    finally:
        scene.close()


@pytest.mark.skipif(SIM_DEVICE == "cpu", reason="needs the buffers on a CUDA device (scripts/gpu_check.sh)")
def test_sapien_works_on_torchs_current_stream(sim):
    stream = torch.cuda.Stream(device=sim.device)
    with torch.cuda.stream(stream):
        sim.step()
        sim.actors["cube"].pose()
    assert sim.gpu.cuda_stream == stream.cuda_stream
    sim.buffers.stale()


def test_a_mounted_camera_follows_its_body_in_the_pose_buffer():
    # GPU PhysX writes no pose back to entities, so the GPU path reads a mounted camera's
    # pose from its body's buffer row; the emulation's CPU entities do move, so the
    # camera's own matrices (the CPU path) are the reference here
    from robosim.sensors.camera import CameraConfig
    from robosim.sensors.sensor_cameras import SensorCameras

    scene = _scene(render=True, finalize=False)
    try:
        configs = [CameraConfig("on_cube", (0.0, 0.0, 0.1, 0.7071068, 0.0, 0.7071068, 0.0), 32, 32, mount="cube"),
                   CameraConfig("fixed", (0.5, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0), 32, 32)]
        sensors = SensorCameras(scene, configs)
        scene.finalize()
        cube = scene.actors["cube"]
        moved = cube.pose().clone()
        moved[:, :3] += torch.tensor([[0.05, 0.0, 0.1], [0.0, -0.05, 0.2], [0.02, 0.02, 0.3]], device=moved.device)
        moved[:, 3:] = torch.tensor([0.9238795, 0.0, 0.0, 0.3826834], device=moved.device)   # 45 deg about z
        cube.set_pose(moved)
        for _ in range(3):
            scene.step()
        gpu, cpu = sensors._gpu.params(), sensors.params()
        for name in ("on_cube", "fixed"):
            for key in ("intrinsic_cv", "extrinsic_cv", "cam2env_gl"):
                assert gpu[name][key].device == scene.device     # "cuda:k" on both sides
                assert torch.allclose(gpu[name][key].cpu(), cpu[name][key].cpu(), atol=1e-4), (name, key)
        assert not torch.allclose(gpu["on_cube"]["cam2env_gl"][0], gpu["on_cube"]["cam2env_gl"][1])
    finally:
        scene.close()
