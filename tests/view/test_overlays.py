"""Force arrows and camera frustums in the viewer's scene graph: arrows sit on the
contact points with lengths of force / force_scale (their sum under a resting cube is its
weight, from its PhysX mass), go away when the contact ends or the toggle is off;
frustums exist per camera and env and ride on a moving mount."""
from __future__ import annotations

import numpy as np
import pytest
import sapien
import torch
from scene_nodes import nodes

import robosim
from robosim.view import attach
from robosim.view.live import Controls


def cube_arrows(viewer, env, i: int) -> np.ndarray:
    """(K, 3) arrow vectors of env i that start under the cube."""
    segments = np.asarray(viewer.forces.nodes[i].points)
    cube = env.sim.actors["cube"].pose()[i].numpy()
    under = (np.abs(segments[:, 0, :2] - cube[:2]).max(axis=1) < 0.03) & (segments[:, 0, 2] < 0.01)
    return segments[under, 1] - segments[under, 0]


def test_force_arrows_carry_the_contact_force(env, viewer):
    for _ in range(3):
        env.step(torch.zeros(env.action_space.shape))   # the cube settles on the ground
    controls = Controls(viewer)
    controls.forces.value = True                     # the GUI toggle
    viewer.update(force=True)
    body = env.sim.actors["cube"].entities[0].find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)
    weight = body.mass * 9.81
    for i in range(env.num_envs):
        assert f"/env{i}/forces" in nodes(viewer)
        vectors = cube_arrows(viewer, env, i)
        assert len(vectors) >= 3                     # the cube's corners on the ground
        total = vectors.sum(axis=0) * viewer.force_scale
        assert abs(abs(total[2]) - weight) < 0.02 * weight, (total, weight)
        assert np.abs(total[:2]).max() < 0.01 * weight
    before = cube_arrows(viewer, env, 0)
    controls.force_scale.value = 2 * viewer.force_scale   # the slider: twice the N per metre
    viewer.update(force=True)
    np.testing.assert_allclose(cube_arrows(viewer, env, 0), before / 2, rtol=1e-5, atol=1e-7)

    lifted = env.sim.actors["cube"].pose().clone()
    lifted[:, 1] += 0.4                              # beside the arm, 10 cm up: the contact ends
    lifted[:, 2] += 0.1
    env.sim.actors["cube"].set_pose(lifted)
    env.step(torch.zeros(env.action_space.shape))
    assert all(len(rows) == 0 for rows in env.sim.contacts.points())
    viewer.update(force=True)
    assert not any(name.endswith("/forces") for name in nodes(viewer))


def test_force_arrows_toggle_off(env, viewer):
    env.step(torch.zeros(env.action_space.shape))
    viewer.show_forces = True
    viewer.update(force=True)
    assert "/env0/forces" in nodes(viewer)
    viewer.show_forces = False
    viewer.update(force=True)
    assert not any(name.endswith("/forces") for name in nodes(viewer))


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), "5"])
def test_bad_force_scale(viewer, scale):
    with pytest.raises(ValueError, match="force_scale"):
        viewer.force_scale = scale


def test_a_frustum_per_camera_and_env(env, viewer):
    viewer.show_frustums = True
    viewer.update(force=True)
    config = env.parts.sensor_cameras[0]             # PickCube's fixed base_camera
    sapien_axes = sapien.Pose(config.pose[:3], config.pose[3:]).to_transformation_matrix()[:3, :3]
    for i in range(env.num_envs):
        node = viewer.server.scene._handle_from_node_name[f"/env{i}/cameras/{config.name}"]
        np.testing.assert_allclose(node.position, config.pose[:3], atol=1e-5)
        drawn = sapien.Pose(q=node.wxyz).to_transformation_matrix()[:3, :3]
        np.testing.assert_allclose(drawn[:, 2], sapien_axes[:, 0], atol=1e-5)   # OpenCV +z = SAPIEN's forward +x
        np.testing.assert_allclose(drawn[:, 1], -sapien_axes[:, 2], atol=1e-5)  # OpenCV +y (down) = -up
        assert node.fov == pytest.approx(config.fovy) and node.aspect == pytest.approx(config.width / config.height)
    viewer.show_frustums = False
    viewer.update(force=True)
    assert not any("/cameras/" in name for name in nodes(viewer))


WRIST = {"base_camera": {"mount": "panda_hand", "pose": (0.0, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0),
                          "width": 32, "height": 32}}


# the camera not built / built (its first picture compiles SAPIEN's shaders: ~35 s alone on 2 cores)
@pytest.mark.parametrize("obs_mode", ["state", pytest.param("rgb", marks=pytest.mark.slow)])
def test_a_mounted_frustum_follows_its_mount(port, obs_mode):
    env = robosim.make("PickCube-v1", num_envs=1, render_mode="rgb_array", render_lod="low", obs_mode=obs_mode,
                       sensor_configs=WRIST)
    try:
        env.reset(seed=0)
        viewer = attach(env, port=port)
        try:
            viewer.show_frustums = True
            positions = []
            for _ in range(2):
                actions = torch.zeros(env.action_space.shape)
                actions[:, 2] = 1.0                  # the arm moves
                for _ in range(5):
                    env.step(actions)
                viewer.update(force=True)
                node = viewer.server.scene._handle_from_node_name["/env0/cameras/base_camera"]
                hand = env.sim.articulations["panda"].link_pose("panda_hand")[0].numpy().astype(np.float64)
                expected = sapien.Pose(hand[:3], hand[3:]) * sapien.Pose([0.0, 0.0, 0.05])
                np.testing.assert_allclose(node.position, expected.p, atol=1e-4)
                positions.append(np.array(node.position))
            assert np.linalg.norm(positions[1] - positions[0]) > 0.01
            if obs_mode == "rgb":                     # the built camera's own extrinsics agree
                gl = env.cameras.sensors.params()["base_camera"]["cam2env_gl"][0].numpy()
                np.testing.assert_allclose(node.position, gl[:3, 3], atol=1e-4)
                drawn = sapien.Pose(q=node.wxyz).to_transformation_matrix()[:3, :3]
                np.testing.assert_allclose(drawn[:, 2], -gl[:3, 2], atol=1e-4)   # OpenGL looks along -z
        finally:
            viewer.close()
    finally:
        env.close()


def test_a_mount_the_scene_lacks_is_named(port):
    env = robosim.make("PickCube-v1", num_envs=1, render_mode="rgb_array", render_lod="low",
                       sensor_configs={"base_camera": {"mount": "no_such_link"}})
    try:
        with pytest.raises(ValueError, match="mount must name an entity of the scene, got 'no_such_link'"):
            attach(env, port=port)
    finally:
        env.close()
