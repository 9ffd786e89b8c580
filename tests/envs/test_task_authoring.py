"""Writing a task with documented calls only: a mesh, a composite and an articulation in
one scene; task parameters through make; the first-reset/step checks on hook outputs;
user tasks reached from the CLI."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import imageio
import numpy as np
import pytest
import torch
import trimesh

import robosim
from robosim.envs.task_checks import TaskOutputError
from robosim.sensors.camera import CameraConfig
from robosim.sim import ArticulationModel, Box, Joint, Link, Mesh, RigidObject


class GadgetsTask(robosim.Task):
    """A cylinder mesh, a T-shaped composite and a hinged flap, on the floor in front of the robot."""

    parameters = {"tee_color": (0.9, 0.5, 0.1, 1.0), "mesh_radius": 0.03}
    sensor_cameras = (CameraConfig.looking_at("top", eye=(0.05, 0.0, 0.9), target=(0.05, 0.0, 0.0),
                                              width=96, height=96, fovy=1.2),)
    human_camera = {"yaw": 90.0, "distance": 1.0}

    def build_scene(self, sim, rng):
        cylinder = trimesh.creation.cylinder(radius=self.mesh_radius, height=0.04)
        self.can = sim.add_object("can", RigidObject([Mesh(cylinder, collision="convex_hull", color=(0.1, 0.8, 0.2))],
                                                     pose=(0.2, 0.2, 0.02)))
        self.tee = sim.add_object("tee", RigidObject(
            [Box((0.06, 0.015, 0.015), pose=(0, 0.045, 0), color=self.tee_color),
             Box((0.015, 0.045, 0.015), color=self.tee_color)], pose=(0.2, -0.2, 0.015)))
        self.flap = sim.add_articulation("flap", ArticulationModel([
            Link("post", [Box((0.02, 0.02, 0.05), pose=(0, 0, 0.05), color=(0.3, 0.3, 0.8))]),
            Link("leaf", [Box((0.05, 0.005, 0.04), pose=(0.05, 0, 0), color=(0.8, 0.2, 0.6))], parent="post",
                 joint=Joint("revolute", pose_in_parent=(0.02, 0, 0.05), axis=(0, 0, 1), limits=(-1.5, 1.5),
                             damping=0.5))], pose=(-0.05, 0.25, 0.0)))

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        self.flap.set_qpos(rng.uniform(-1.0, 1.0, (1,)), env_idx)

    def evaluate(self):
        z = self.can.pose()[:, 2]
        return {"success": z > 0.2, "fail": torch.zeros_like(z, dtype=torch.bool)}

    def dense_reward(self, info):
        return -self.can.pose()[:, 2]

    def task_observations(self, info):
        return {"can_pose": self.can.pose(), "tee_pose": self.tee.pose(), "flap_qpos": self.flap.qpos()}


@pytest.fixture(scope="module")
def gadgets():
    env = robosim.make(GadgetsTask, num_envs=2, obs_mode="segmentation", tee_color=(0.2, 0.2, 0.9, 1.0))
    yield env
    env.close()


def test_parameters_reach_the_task(gadgets):
    assert gadgets.task.tee_color == (0.2, 0.2, 0.9, 1.0) and gadgets.task.mesh_radius == 0.03
    with pytest.raises(ValueError, match=r"\['radius'\]"):
        robosim.make(GadgetsTask, num_envs=1, radius=0.05)
    with pytest.raises(TypeError, match="mesh_radius"):
        robosim.make(GadgetsTask, num_envs=1, mesh_radius="big")


def test_poses_in_obs_and_state_match_the_segmentation(gadgets):
    obs, _ = gadgets.reset(seed=3)
    for _ in range(5):
        obs, *_ = gadgets.step(None)
    extra = obs["extra"]
    state = gadgets.get_state()
    can_cols = gadgets.sim.state_dim   # state = articulations, then actors: find the can by value
    assert can_cols > 0
    assert torch.isclose(state, extra["can_pose"][:, :1]).any()
    cam = obs["sensor_param"]["top"]
    seg = obs["sensor_data"]["top"]["segmentation"][..., 0]
    ids = gadgets.cameras.segmentation_ids
    for name, pos in (("can", extra["can_pose"][:, :3]), ("tee", extra["tee_pose"][:, :3])):
        # project the object's env-frame centre (top face) into the camera; the pixel shows it
        top = pos.clone()
        top[:, 2] += 0.015
        homog = torch.cat([top, torch.ones(len(top), 1)], dim=1)
        cam_xyz = torch.einsum("nij,nj->ni", cam["extrinsic_cv"], homog)
        uvw = torch.einsum("nij,nj->ni", cam["intrinsic_cv"], cam_xyz)
        u, v = (uvw[:, 0] / uvw[:, 2]).round().long(), (uvw[:, 1] / uvw[:, 2]).round().long()
        for i in range(gadgets.num_envs):
            assert seg[i, v[i], u[i]] == ids[name], (name, i)
    # the flap leaf is where its joint angle puts it: a point 8 cm out along the leaf
    q = extra["flap_qpos"][:, 0]
    hinge = torch.tensor([-0.05 + 0.02, 0.25, 0.05])
    for i in range(gadgets.num_envs):
        p = hinge + torch.tensor([0.08 * math.cos(q[i]), 0.08 * math.sin(q[i]), 0.04])
        uvw = cam["intrinsic_cv"][i] @ (cam["extrinsic_cv"][i] @ torch.cat([p, torch.ones(1)]))
        u, v = int((uvw[0] / uvw[2]).round()), int((uvw[1] / uvw[2]).round())
        assert seg[i, v, u] == ids["leaf"], i


class BrokenTask(robosim.Task):
    mistake = "none"

    def build_scene(self, sim, rng):
        self.box = sim.add_object("box", RigidObject([Box(0.02)], pose=(0, 0, 0.02)))

    def evaluate(self):
        n = self.num_envs
        info = {"success": torch.zeros(n, dtype=torch.bool), "fail": torch.zeros(n, dtype=torch.bool)}
        if self.mistake == "no_fail":
            del info["fail"]
        if self.mistake == "float_success":
            info["success"] = info["success"].float()
        return info

    def dense_reward(self, info):
        r = torch.zeros(self.num_envs)
        return r[:, None] if self.mistake == "column_reward" else r


@pytest.mark.parametrize("mistake, words", [
    ("no_fail", ["evaluate()", "'fail'", "(2,)"]),
    ("float_success", ["evaluate()", "['success']", "torch.float32", "bool"]),
    ("column_reward", ["dense_reward(info)", "(2, 1)", "(2,)"]),
])
def test_hook_mistakes_are_named(mistake, words):
    task = type(f"Broken_{mistake}", (BrokenTask,), {"mistake": mistake})
    env = robosim.make(task, num_envs=2)
    try:
        with pytest.raises(TaskOutputError) as err:
            env.reset(seed=0)
            env.step(None)
        for word in words:
            assert word in str(err.value), (word, str(err.value))
    finally:
        env.close()


USER_MODULE = textwrap.dedent('''
    import torch
    import robosim
    from robosim.sim import Box, RigidObject

    @robosim.register_task("UserLift-v1")
    class UserLift(robosim.Task):
        human_camera = {"yaw": 180.0, "distance": 0.9}

        def build_scene(self, sim, rng):
            self.cube = sim.add_object("cube", RigidObject([Box(0.03, color=(0.1, 0.4, 1.0))], pose=(0, 0, 0.03)))

        def evaluate(self):
            z = self.cube.pose()[:, 2]
            return {"success": z > 0.2, "fail": torch.zeros_like(z, dtype=torch.bool)}

        def dense_reward(self, info):
            return -self.cube.pose()[:, 2]
''')


def test_cli_evaluates_a_task_from_a_user_module(tmp_path):
    (tmp_path / "usertasks.py").write_text(USER_MODULE)
    robosim_cmd = os.path.join(os.path.dirname(sys.executable), "robosim")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base = [robosim_cmd, "eval", "UserLift-v1", "--policy", "robosim.record.policies:random",
            "--episodes", "2", "--num-envs", "2"]
    missing = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "--import" in missing.stderr
    done = subprocess.run(base[:2] + ["--import", "usertasks"] + base[2:] + ["--video", "out.mp4"],
                          cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    frames = np.stack([f for f in imageio.get_reader(str(tmp_path / "out.mp4"))])   # list() trips on len = inf
    assert frames.shape[0] >= 10 and frames.std() > 5
    listed = subprocess.run([robosim_cmd, "list", "--import", "usertasks"], cwd=tmp_path, capture_output=True,
                            text=True, env=env)
    assert "UserLift-v1" in listed.stdout


def test_builtin_task_parameter_changes_the_scene_and_still_solves():
    from robosim.record.evaluate import evaluate

    env = robosim.make("PickCube-v1", num_envs=8, cube_half_size=0.03)
    try:
        env.reset(seed=0)
        assert torch.allclose(env.task.cube.pose()[:, 2], torch.full((8,), 0.03), atol=1e-3)
        policy = env.task.solution_policy()
        result = evaluate(env, lambda obs: policy(), 16, seed=0, progress=False)
        assert sum(result.success) >= 13
    finally:
        env.close()
    with pytest.raises(ValueError, match="cube_half_size"):
        robosim.make("PickCube-v1", num_envs=1, cube_half_size=0.5)


class DrawsAtBuild(robosim.Task):
    """Draws the cube's size from the build rng (so it must declare randomizes_build)."""

    def build_scene(self, sim, rng):
        half = rng.uniform(0.015, 0.03)
        self.cube = sim.add_object("cube", RigidObject([Box(0.02, color=(0.2, 0.2, 0.9))], pose=(0, 0, 0.02)))
        self.half = half

    def evaluate(self):
        z = self.cube.pose()[:, 2]
        return {"success": z > 1.0, "fail": torch.zeros_like(z, dtype=torch.bool)}

    def dense_reward(self, info):
        return torch.zeros(self.num_envs)


def test_build_draws_without_randomizes_build_are_refused():
    with pytest.raises(ValueError, match=r"DrawsAtBuild\.build_scene drew from its rng.*randomizes_build = True"):
        robosim.make(DrawsAtBuild, num_envs=1)
    declared = type("DeclaredDraws", (DrawsAtBuild,), {"randomizes_build": True})
    env = robosim.make(declared, num_envs=1, seed=0)
    env.close()


@pytest.mark.parametrize("target, kind", [("object:goal", "kinematic")])
def test_mass_event_on_a_kinematic_body_is_refused(target, kind):
    event = {"heavy_goal": {"mode": "reset", "target": target, "property": "mass", "dist": {"uniform": [0.1, 0.2]}}}
    with pytest.raises(ValueError) as err:
        robosim.make("PickCube-v1", num_envs=1, randomization=event)
    for word in ("'heavy_goal'", "'mass'", "'goal'", kind):
        assert word in str(err.value), (word, str(err.value))


def test_scripted_solution_example():
    """docs/writing-tasks.md "Writing a scripted solution": the block runs as printed."""
    import re

    from robosim.envs.solutions import ee_action

    guide = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "writing-tasks.md")).read()
    section = guide.split("## Writing a scripted solution", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "writing-tasks.md", "exec"), namespace)
    env, policy = namespace["env"], namespace["policy"]
    try:
        assert namespace["info"]["success"].all() and (policy.phase == 1).all()
        env.reset(options={"env_idx": [0]})
        env.step(policy())
        assert policy.phase.tolist()[1:] == [1, 1, 1] and policy.phase[0] == 0
        env.step(policy(object()))   # a scripted policy takes an obs and ignores it
    finally:
        env.close()
    joints = robosim.make("TouchCube-v1", num_envs=1, control_mode="pd_joint_delta_pos")
    try:
        with pytest.raises(ValueError, match="control_mode.*pd_joint_delta_pos"):
            ee_action(joints.task.robot, torch.zeros(1, 3), None, torch.ones(1))
    finally:
        joints.close()
