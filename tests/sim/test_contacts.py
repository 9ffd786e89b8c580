"""Contact forces against physics: resting cubes weigh m*g in every env (shared and
separate systems), touching / not touching, the scripted PickCube grasp, bad inputs."""
from __future__ import annotations

import pytest
import torch

import robosim
from robosim.sim import SimScene
from robosim.sim.isolation import IsolatedSimScene
from robosim.sim.objects import Box, RigidObject, Sphere

N = 3
G = 9.81


@pytest.fixture(scope="module", params=["shared", "separate"])
def stack(request):
    sim = SimScene(N, 100, render=False) if request.param == "shared" else IsolatedSimScene(N, 100)
    sim.add_ground()
    views = {
        "cube": sim.add_object("cube", RigidObject([Box(0.02)], pose=(0, 0, 0.02))),
        "top": sim.add_object("top", RigidObject([Box(0.02)], pose=(0, 0, 0.06))),
        "ball": sim.add_object("ball", RigidObject([Sphere(0.02)], pose=(0.3, 0, 0.02))),
    }
    sim.finalize()
    for _ in range(60):
        sim.step()
    yield sim, views
    sim.close()


def test_resting_bodies_carry_their_weight_in_every_env(stack):
    sim, v = stack
    m_cube, m_top = v["cube"].bodies[0].mass, v["top"].bodies[0].mass
    up = torch.tensor([0.0, 0.0, 1.0])
    # the top cube rests on the cube: the ground holds both, the cube holds the top one
    torch.testing.assert_close(sim.contacts.net_force(v["top"]), (m_top * G * up).expand(N, 3),
                               rtol=0, atol=0.01 * m_top * G)
    torch.testing.assert_close(sim.contacts.net_force(v["cube"]), (m_cube * G * up).expand(N, 3),
                               rtol=0, atol=0.01 * m_cube * G)
    torch.testing.assert_close(sim.contacts.pair_force(v["cube"], v["top"]), (-m_top * G * up).expand(N, 3),
                               rtol=0, atol=0.01 * m_top * G)
    torch.testing.assert_close(sim.contacts.pair_force(v["top"], v["cube"]),
                               -sim.contacts.pair_force(v["cube"], v["top"]))
    assert sim.contacts.net_force(v["cube"]).dtype == torch.float32


def test_touching_and_not_touching(stack):
    sim, v = stack
    assert sim.contacts.is_touching(v["cube"], v["top"]).tolist() == [True] * N
    assert sim.contacts.is_touching(v["cube"], v["ball"]).tolist() == [False] * N
    assert torch.equal(sim.contacts.pair_force(v["cube"], v["ball"]), torch.zeros(N, 3))


def test_bad_inputs_are_named(stack):
    sim, v = stack
    with pytest.raises(TypeError, match="body must be an ActorView"):
        sim.contacts.net_force("cube")
    with pytest.raises(ValueError, match="max_separation"):
        sim.contacts.is_touching(v["cube"], v["top"], max_separation=float("nan"))


def test_physx_cuda_is_refused_by_name():
    sim = SimScene(1, 100, render=False)
    sim.backend = "physx_cuda"    # what CudaSimScene declares
    for query in ("contacts", "welds", "collisions"):
        with pytest.raises(NotImplementedError, match=f"sim.{query} needs sim_backend 'physx_cpu', got 'physx_cuda'"):
            getattr(sim, query)
    sim.close()


def test_grasp_follows_the_scripted_pick():
    env = robosim.make("PickCube-v1", num_envs=2, obs_mode="state")
    try:
        env.reset(seed=0)
        task, sim = env.task, env.sim
        fingers = task.robot.spec.gripper.pad_links
        grasp = lambda: sim.contacts.is_grasping(task.cube, task.robot.view, fingers)   # noqa: E731
        policy = task.solution_policy()
        assert grasp().tolist() == [False, False]        # open hand above the cube
        held = torch.zeros(2, dtype=torch.bool)
        for _ in range(env.max_episode_steps):
            lifted = task.cube.pose()[:, 2] > 0.04          # cube (2 cm half size) off the table
            open_ = task.robot.gripper_width(task.robot.view.qpos()) > 0.045   # jaws wider than the cube
            now = grasp()
            assert not now[open_].any(), "grasping with open jaws"
            assert now[lifted].all(), "a lifted cube is not grasped"
            held |= now
            env.step(policy())
        assert held.all()
    finally:
        env.close()


def test_writing_tasks_example():
    """docs/writing-tasks.md "Contacts, forces, attach and collision groups" runs as printed."""
    import os
    import re

    guide = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "writing-tasks.md")).read()
    section = guide.split("## Contacts, forces, attach and collision groups", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    ns: dict = {}
    exec(compile(block, "writing-tasks.md", "exec"), ns)
    sim, cube, ghost = ns["sim"], ns["cube"], ns["ghost"]
    try:
        mg = cube.bodies[1].mass * G
        torch.testing.assert_close(ns["weight"][1], torch.tensor([0.0, 0.0, mg]), rtol=0, atol=0.01 * mg)
        assert ns["touching"].tolist() == [False, True]
        z = ghost.pose()[:, 2]
        assert abs(z[0].item() - 0.12) < 0.005 and abs(z[1].item() - 0.02) < 0.005
        assert abs(cube.pose()[0, 2].item() - 0.15) < 1e-6        # welded in the air
    finally:
        sim.close()


def vise_model():
    """A one-jaw gripper in generic form: a fixed palm plate and a prismatic jaw that
    closes along -x toward it."""
    from robosim.sim.objects import ArticulationModel, Joint, Link

    return ArticulationModel([
        Link("palm", [Box((0.01, 0.05, 0.05))], ),
        Link("jaw", [Box((0.01, 0.05, 0.05))], parent="palm",
             joint=Joint("prismatic", pose_in_parent=(0.1, 0, 0), axis=(-1, 0, 0), limits=(0.0, 0.1),
                         stiffness=1000.0, damping=50.0, force_limit=20.0)),
    ], pose=(-0.02, 0, 0.05))


def test_one_jaw_grasp_against_a_fixed_jaw():
    sim = SimScene(2, 100, render=False)
    sim.add_ground()
    cube = sim.add_object("cube", RigidObject([Box(0.02)], pose=(0.03, 0, 0.02)))   # between palm and jaw
    vise = sim.add_articulation("vise", vise_model())
    sim.finalize()
    jaws = ("palm", "jaw")
    for _ in range(20):
        sim.step()
    assert sim.contacts.is_grasping(cube, vise, jaws).tolist() == [False, False]   # jaw open
    sim.contacts.net_force((vise, "jaw"))
    vise.set_drive_targets(torch.tensor([[0.08]]), torch.tensor([1]))          # close env 1 only
    for _ in range(60):
        sim.step()
    assert sim.contacts.is_grasping(cube, vise, jaws).tolist() == [False, True]
    # the jaw pushes the cube toward the palm (-x); the palm pushes back (+x)
    on_cube_from_jaw = sim.contacts.pair_force(cube, (vise, "jaw"))[1]
    assert on_cube_from_jaw[0] < -1.0
    assert sim.contacts.net_force((vise, "jaw")).shape == (2, 3)
    with pytest.raises(ValueError, match="fingers must be two link names"):
        sim.contacts.is_grasping(cube, vise, ("jaw",))
    with pytest.raises(ValueError, match="link name must be one of"):
        sim.contacts.is_grasping(cube, vise, ("jaw", "thumb"))
    sim.close()
