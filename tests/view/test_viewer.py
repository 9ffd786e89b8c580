"""robosim.view.attach: the viser scene mirrors the env (a node per body of every env,
poses that follow the env's own views), overlays come and go, bad input is refused."""
from __future__ import annotations

import socket

import numpy as np
import pytest
import torch
import viser
import websockets.sync.client
from scene_nodes import nodes

import robosim
from robosim.view import attach


def test_a_node_per_body_of_every_env(env, viewer):
    """Every body is a batched mesh node (its coloured parts as one glTF) with one instance per env."""
    links = env.sim.articulations["panda"].link_names
    for name in ["cube", "goal", "panda_hand", "panda_leftfinger", "panda_link3"]:
        assert name in links or name in env.sim.actors
        body_nodes = [n for n in nodes(viewer) if n.startswith(f"/bodies/{name}_") and n.endswith("/mesh")]
        assert len(body_nodes) == 1, (name, body_nodes)
        mesh = viewer.server.scene._handle_from_node_name[body_nodes[0]]
        assert len(mesh.batched_positions) == env.num_envs
        for i in range(env.num_envs):
            assert name in viewer.body_names(i)
            assert viewer.body_pose(i, name).shape == (7,)
    assert "/tcp" in nodes(viewer) and len(viewer.tcp_node.batched_positions) == env.num_envs
    assert all(f"/env{i}/label" in nodes(viewer) for i in range(env.num_envs))
    assert viewer.url == f"http://127.0.0.1:{viewer.port}"


def test_poses_follow_the_env(env, viewer):
    actions = torch.zeros(env.action_space.shape)
    actions[:, 0] = 1.0    # the arm moves
    for _ in range(3):
        env.step(actions)
    assert viewer.update(force=True)
    for i in range(env.num_envs):
        cube = env.sim.actors["cube"].pose()[i].numpy()
        np.testing.assert_allclose(viewer.body_pose(i, "cube")[:3], cube[:3], atol=1e-6)
        hand = env.sim.articulations["panda"].link_pose("panda_hand")[i].numpy()
        drawn = viewer.body_pose(i, "panda_hand")
        np.testing.assert_allclose(drawn[:3], hand[:3], atol=1e-6)
        np.testing.assert_allclose(abs(drawn[3:] @ hand[3:]), 1.0, atol=1e-5)
        tcp = env.robot.tcp_pose()[i].numpy()
        np.testing.assert_allclose(viewer.tcp_node.batched_positions[i] - viewer.grid[i], tcp[:3], atol=1e-5)
    # envs sit on a grid: env 1's frame is beside env 0's, and so are its bodies
    assert np.linalg.norm(viewer.env_nodes[1].position - viewer.env_nodes[0].position) > 1.0
    part = viewer.groups[0].handles[0]
    assert np.linalg.norm(part.batched_positions[1] - part.batched_positions[0]) > 1.0


def test_showing_one_env_hides_the_others(env, viewer):
    viewer.set_env_visible(1)
    assert [n.visible for n in viewer.env_nodes] == [False, True]
    assert all(list(h.batched_scales) == [0.0, 1.0] for g in viewer.groups for h in g.handles)
    viewer.set_env_visible(None)
    assert all(list(h.batched_scales) == [1.0, 1.0] for g in viewer.groups for h in g.handles)


def test_updates_are_dropped_inside_the_rate_limit(env, port):
    v = attach(env, port=port, hz=1e-3)   # one push per 1000 s: the second call is always inside it
    try:
        pushed = v.frames_pushed
        assert not v.update()
        assert v.frames_pushed == pushed
        assert v.update(force=True)
    finally:
        v.close()


def test_labels_show_reward_success_and_fault(env, viewer):
    reward = torch.tensor([0.5, -1.25])
    info = {"success": torch.tensor([True, False]), "sim_fault": torch.tensor([0, 3], dtype=torch.int8)}
    viewer.update(reward, info, force=True)
    assert viewer.label_nodes[0].text == "env 0  success"
    assert viewer.label_nodes[1].text == "env 1  sim_fault 3"
    assert viewer.reward_table.content.splitlines()[2:] == ["| 0 | 0.500 | yes |", "| 1 | -1.250 |  |"]


def test_contact_overlay_appears_and_disappears(env, viewer):
    env.step(torch.zeros(env.action_space.shape))   # the cube rests on the ground: contacts exist
    viewer.show_contacts = True
    viewer.update(force=True)
    for i in range(env.num_envs):
        assert f"/env{i}/contacts" in nodes(viewer)
        points = viewer.contact_nodes[i].points
        assert len(points) > 0
        assert np.abs(points[:, 2]).max() < 0.05    # ground contacts, in the env's frame
    viewer.show_contacts = False
    viewer.update(force=True)
    assert not any(name.endswith("/contacts") for name in nodes(viewer))


def test_a_port_in_use_is_named(env, port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        with pytest.raises(ValueError, match=f"port {port} .*in use"):
            attach(env, port=port)


@pytest.mark.parametrize("port, error", [(0, ValueError), (70000, ValueError), ("80", TypeError)])
def test_bad_ports(env, port, error):
    with pytest.raises(error, match="port"):
        attach(env, port=port)


def test_an_env_without_a_render_world_is_refused(port):
    env = robosim.make("PickCube-v1", num_envs=1)
    try:
        with pytest.raises(ValueError, match="render_mode='rgb_array'"):
            attach(env, port=port)
    finally:
        env.close()


def test_a_client_disconnecting_stops_nothing(env, viewer):
    """A browser that goes away mid-episode (here: a websocket client that reads the start
    of the scene and hangs up) leaves the viewer updating and serving the next client."""
    url = f"ws://127.0.0.1:{viewer.port}"
    protocol = [f"viser-v{viser.__version__}"]
    client = websockets.sync.client.connect(url, subprotocols=protocol)
    assert client.recv(timeout=30)   # the scene starts to arrive
    client.close()
    for _ in range(2):
        env.step(torch.zeros(env.action_space.shape))
        assert viewer.update(force=True)
    cube = env.sim.actors["cube"].pose()[0].numpy()
    np.testing.assert_allclose(viewer.body_pose(0, "cube")[:3], cube[:3], atol=1e-6)
    with websockets.sync.client.connect(url, subprotocols=protocol) as again:
        assert again.recv(timeout=30)


def test_a_multi_robot_task_draws_each_robots_tcp(port):
    env = robosim.make("TwoArmReach-v1", num_envs=1, render_mode="rgb_array", render_lod="low")
    try:
        env.reset(seed=0)
        from robosim.view.live import Controls, run_live, zero_policy

        viewer = attach(env, port=port)
        try:
            assert {f"/tcp_{slot}" for slot in env.robots} <= nodes(viewer)
            assert run_live(env, viewer, zero_policy(env), Controls(viewer, time_scale=0.0), max_steps=2) == 2
            viewer.update(force=True)   # the loop's last step may fall inside the rate limit
            for node, robot in zip(viewer.tcp_nodes, env.robots.values()):
                np.testing.assert_allclose(node.batched_positions[0] - viewer.grid[0],
                                           robot.tcp_pose()[0, :3].numpy(), atol=1e-5)
        finally:
            viewer.close()
    finally:
        env.close()
