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
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="substeps must be an int >= 1"):
            sim.contacts.net_force(v["cube"], substeps=bad)


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


def heavy_stack(isolation: str) -> tuple[SimScene, object]:
    """A 0.2 kg cube on a 0.064 kg one: PhysX's per-substep solve of this pair does not
    converge (module docstring of robosim.sim.contacts); returns the scene and the top cube."""
    sim = SimScene(2, 100, render=False) if isolation == "shared" else IsolatedSimScene(2, 100)
    sim.add_ground()
    sim.add_object("cube", RigidObject([Box(0.02)], pose=(0, 0, 0.02)))
    top = sim.add_object("top", RigidObject([Box(0.02)], pose=(0, 0, 0.06), density=3125.0))
    sim.finalize()
    return sim, top


@pytest.mark.parametrize("isolation", ["shared", "separate"])
def test_control_step_reading_is_the_mean_of_its_substeps(isolation):
    """net_force(body, substeps=k) is the mean of the last k one-substep readings, and it
    starts afresh in the envs a write (forget_history) touched."""
    sim, top = heavy_stack(isolation)
    sim.contacts.net_force(top, substeps=5)   # starts recording
    cube = sim.actors["cube"]
    readings, pairs = [], []
    for _ in range(12):
        sim.step()
        readings.append(sim.contacts.net_force(top).double())
        pairs.append(sim.contacts.pair_force(cube, top).double())
    assert (readings[-1][:, 2] > 0.5 * top.bodies[0].mass * G).all()   # the stack rests in every env
    torch.testing.assert_close(sim.contacts.net_force(top, substeps=5).double(), torch.stack(readings[-5:]).mean(0),
                               rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(sim.contacts.pair_force(cube, top, substeps=3).double(),
                               torch.stack(pairs[-3:]).mean(0), rtol=1e-5, atol=1e-6)
    sim.set_state(sim.get_state(torch.tensor([1])), torch.tensor([1]))
    sim.forget_history(torch.tensor([1]))
    assert sim.contacts.net_force(top, substeps=5)[1].tolist() == [0.0, 0.0, 0.0]   # no substep since the write
    after = []
    for _ in range(2):
        sim.step()
        after.append(sim.contacts.net_force(top).double())
    window = sim.contacts.net_force(top, substeps=5).double()
    torch.testing.assert_close(window[0], torch.stack(readings[-3:] + after)[:, 0].mean(0), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(window[1], torch.stack(after)[:, 1].mean(0), rtol=1e-5, atol=1e-6)
    sim.close()


def test_control_step_reading_does_not_flicker_like_the_last_substep():
    """Control steps of 5 substeps while the heavy stack is awake: the top cube's
    last-substep weight swings about m*g by up to 11%, its mean over the control step
    stays within 5% and swings less than half as much."""
    sim, top = heavy_stack("shared")
    mg = top.bodies[0].mass * G
    sim.contacts.net_force(top, substeps=5)
    last, whole = [], []
    for _ in range(8):
        for _ in range(5):
            sim.step()
        last.append(sim.contacts.net_force(top)[0, 2].item() / mg)
        whole.append(sim.contacts.net_force(top, substeps=5)[0, 2].item() / mg)
    assert max(abs(w - 1) for w in whole) < 0.05
    assert max(whole) - min(whole) < 0.5 * (max(last) - min(last))
    sim.close()
