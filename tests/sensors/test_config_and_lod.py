"""Camera configuration, bad camera input, and render level of detail."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sapien
import torch

import robosim
import robosim.envs.parts as parts
from robosim.sensors import CameraConfig, eye_target_pose, look_at_pose
from robosim.sensors.lod import LOD_LEVELS, decimate


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if an env gets as far as building a scene."""
    def refuse(*args, **kwargs):
        raise AssertionError("a scene was built before the bad input was rejected")

    monkeypatch.setattr(parts, "create_sim_scene", refuse)


@pytest.mark.parametrize("kwargs, words", [
    ({"obs_mode": "rgb", "sensor_configs": {"width": 0}}, ["width", "[1, 4096]", "0"]),
    ({"obs_mode": "rgb", "sensor_configs": {"base_camera": {"height": 5000}}}, ["height", "5000"]),
    ({"obs_mode": "rgb", "sensor_configs": {"wrist": {"width": 64}}}, ["sensor_configs", "base_camera", "'wrist'"]),
    ({"obs_mode": "rgb", "sensor_configs": {"base_camera": {"zoom": 2}}}, ["sensor_configs", "zoom"]),
    ({"obs_mode": "rgb", "sensor_configs": {"fovy": 4.0}}, ["fovy", "4.0"]),
    ({"obs_mode": "depth", "sensor_configs": {"pose": [0, 0, 1, 2, 0, 0, 0]}}, ["quaternion", "unit"]),
    ({"obs_mode": "pixels"}, ["obs_mode", "rgb", "'pixels'"]),
    ({"render_mode": "human"}, ["render_mode", "sensors", "'human'"]),
    ({"render_mode": "rgb_array", "render_camera": {"width": 4097}}, ["render_camera width", "4097"]),
    ({"render_mode": "rgb_array", "render_camera": {"fov": 1}}, ["render_camera", "fov"]),
    ({"render_mode": "rgb_array", "render_camera": {"distance": -1.0}}, ["distance", "-1.0"]),
    ({"render_mode": "rgb_array", "render_lod": "medium"}, ["render_lod", "auto", "'medium'"]),
    ({"render_mode": "rgb_array", "render_lod": 0.0}, ["render_lod", "(0, 1]", "0.0"]),
    ({"render_mode": "rgb_array", "render_size": (0, 64)}, ["width", "0"]),
])
def test_bad_camera_input_is_rejected_before_any_simulation(no_simulation, kwargs, words):
    with pytest.raises((ValueError, TypeError)) as err:
        robosim.make("PickCube-v1", num_envs=1, **kwargs)
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_camera_pose_helpers_look_where_they_say():
    pose = eye_target_pose([1.0, 2.0, 3.0], [1.0, 2.0, 0.0])
    forward = sapien.Pose(pose[:3], pose[3:]).to_transformation_matrix()[:3, 0]
    assert np.allclose(forward, [0, 0, -1], atol=1e-6)
    pose = look_at_pose([0.0, 0.0, 0.0], 2.0, yaw=90.0, pitch=-45.0)
    assert np.allclose(pose[:3], [0.0, -math.sqrt(2), math.sqrt(2)], atol=1e-6)


def test_user_overrides_resolution_pose_and_mount():
    eye, target = (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    top = CameraConfig.looking_at("top", eye, target, width=40, height=30, fovy=1.2)
    wrist = CameraConfig("wrist", [0.0, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0], width=32, height=24, mount="panda_hand")

    class TwoCameraTask(robosim.get_task("PickCube-v1")):
        sensor_cameras = (top, wrist)

    env = robosim.make(TwoCameraTask, num_envs=1, obs_mode="rgb", sensor_configs={"top": {"width": 48}})
    try:
        obs, _ = env.reset(seed=0)
        assert obs["sensor_data"]["top"]["rgb"].shape == (1, 30, 48, 3)
        assert obs["sensor_data"]["wrist"]["rgb"].shape == (1, 24, 32, 3)
        cam2env = obs["sensor_param"]["top"]["cam2env_gl"][0].numpy()
        assert np.allclose(cam2env[:3, 3], eye, atol=1e-5)          # env frame, not world
        assert np.allclose(cam2env[:3, 2], [0, 0, 1], atol=1e-5)     # GL camera looks down its -z
        # the wrist camera rides on the hand: its position follows the hand link
        hand = env.robot.view.link_pose("panda_hand")[0]
        rot = sapien.Pose(hand[:3].numpy(), hand[3:].numpy()).to_transformation_matrix()
        wrist_pos = obs["sensor_param"]["wrist"]["cam2env_gl"][0, :3, 3].numpy()
        assert np.allclose(wrist_pos, rot[:3, :3] @ [0, 0, 0.05] + rot[:3, 3], atol=1e-4)
    finally:
        env.close()


@pytest.fixture(scope="module")
def lod_pair():
    """The same scene at full and at reduced detail, 1 env, 96x96 sensor camera."""
    envs = {}
    for level in ("full", "low"):
        env = robosim.make("PickCube-v1", num_envs=1, obs_mode="segmentation", render_lod=level,
                           sensor_configs={"width": 96, "height": 96})
        env.reset(seed=4)
        envs[level] = env
    yield envs
    for env in envs.values():
        env.close()


def test_render_lod_cuts_triangles_and_keeps_the_picture(lod_pair):
    full, low = lod_pair["full"], lod_pair["low"]
    assert full.cameras.lod_stats == {}
    stats = low.cameras.lod_stats
    assert stats["triangles_before"] > 100_000
    assert stats["triangles_after"] < 0.15 * stats["triangles_before"]
    frames = {k: e.cameras.sensors.capture(("rgb", "segmentation"))["base_camera"] for k, e in lod_pair.items()}
    seg_full, seg_low = frames["full"]["segmentation"], frames["low"]["segmentation"]
    assert (seg_full == seg_low).float().mean() > 0.97             # same objects at the same pixels
    diff = (frames["full"]["rgb"].float() - frames["low"]["rgb"].float()).abs().mean()
    assert diff < 6.0                                              # colours and materials kept
    # decimated links keep their material colours: the dark and light Panda parts survive
    robot = torch.isin(seg_low, torch.tensor([v for k, v in low.cameras.segmentation_ids.items() if "panda" in k]))
    robot_rgb = frames["low"]["rgb"][robot[..., 0]].float().mean(dim=1)
    assert robot_rgb.min() < 80 and robot_rgb.max() > 180


def test_render_lod_never_touches_collision_or_physics(lod_pair):
    def collision_summary(env):
        out = []
        for link in env.robot.view.articulations[0].get_links():
            for shape in link.get_collision_shapes():
                out.append((link.name, type(shape).__name__, getattr(shape, "vertices", np.zeros(0)).shape))
        return out

    assert collision_summary(lod_pair["full"]) == collision_summary(lod_pair["low"])
    action = torch.tensor([[0.5, -0.3, -0.4, 0.1, 0.0, 0.2, -1.0]])
    for env in lod_pair.values():
        env.reset(seed=9)
        for _ in range(4):
            env.step(action)
    assert torch.equal(lod_pair["full"].get_state(), lod_pair["low"].get_state())


def test_decimation_is_cached_on_disk_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOSIM_CACHE_DIR", str(tmp_path))
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=4)
    v, f = sphere.vertices.astype(np.float32), sphere.faces.astype(np.uint32)
    out = decimate(v, f, LOD_LEVELS["low"])
    assert len(out[1]) < 0.2 * len(f)
    assert np.allclose(np.linalg.norm(out[2], axis=1), 1.0, atol=1e-3)
    files = list((tmp_path / "render_lod").glob("*.npz"))
    assert len(files) == 1
    v2 = v.copy()
    v2[0] += 0.01                                                  # other content -> other entry
    decimate(v2, f, LOD_LEVELS["low"])
    assert len(list((tmp_path / "render_lod").glob("*.npz"))) == 2
