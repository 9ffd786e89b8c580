"""Tasks ask for capabilities, not robot names: a robot added from data alone runs the
cube tasks' scripted solutions, and a robot lacking what a task needs is refused with
an error naming the robot, the task and the missing capability. Real SAPIEN physics."""
from __future__ import annotations

import dataclasses
import warnings
import xml.etree.ElementTree as ET

import pytest
import torch

import robosim
from robosim.agents import Requirements, get_robot_spec, register_robot, robot_capabilities
from robosim.agents.builtin_robots import mani_skill_asset
from robosim.agents.kinematics import SerialChain
from robosim.agents.model import RobotModel
from robosim.envs import Task
from robosim.envs.task import check_robot_for_task, robots_for_task
from robosim.record.evaluate import evaluate

CUBE_TASKS = ["PickCube-v1", "PushCube-v1", "StackCube-v1"]
ENVS = 4


def _panda_copy(name: str, **changes) -> robosim.agents.RobotSpec:
    return dataclasses.replace(get_robot_spec("panda"), name=name, **changes)


def _scripted_success(task_id: str, robot: str) -> float:
    env = robosim.make(task_id, num_envs=ENVS, robot=robot, obs_mode="none")
    try:
        policy = env.task.solution_policy()
        return evaluate(env, lambda obs: policy(), episodes=ENVS, seed=0).success_rate
    finally:
        env.close()


@pytest.mark.parametrize("task_id", CUBE_TASKS)
def test_a_copy_of_panda_under_another_name_runs_the_cube_tasks(task_id):
    register_robot(_panda_copy("my_arm"))   # data only: no task file names it
    assert "my_arm" in robots_for_task(robosim.get_task(task_id))
    assert _scripted_success(task_id, "my_arm") >= 0.75


def test_an_unregistered_mani_skill_urdf_runs_the_cube_tasks():
    # mani-skill's panda_v3.urdf (the Panda with a wrist camera mount), which no shipped
    # robot uses: a URDF plus the few lines of data below
    register_robot(_panda_copy("panda_v3_arm", urdf=lambda: mani_skill_asset("panda", "panda_v3.urdf")))
    for task_id in CUBE_TASKS:
        assert _scripted_success(task_id, "panda_v3_arm") >= 0.75, task_id


def test_capabilities_come_from_the_spec():
    caps = robot_capabilities(_panda_copy("my_arm"))
    assert (caps.robot, caps.arm_dof, caps.orientation_control, caps.parallel_gripper) == ("my_arm", 7, True, True)
    assert caps.gripper_width == (0.0, 0.08)   # the Franka hand's GripperSpec
    assert (caps.mobile_base, caps.fingers) == (False, 0)
    assert caps.reach_centre() == pytest.approx((-0.615, 0.0, 0.333))   # panda_joint1 is 0.333 m above the base
    so100 = robot_capabilities(get_robot_spec("so100"))
    assert (so100.arm_dof, so100.orientation_control, so100.gripper_width) == (5, False, (0.0066, 0.0835))
    assert not so100.parallel_gripper   # one revolute jaw against a fixed one
    assert robot_capabilities(_panda_copy("declared", reach=0.855)).reach == 0.855   # a datasheet's


@pytest.mark.parametrize("name", ["panda", "xarm7", "so100", "koch"])
def test_computed_reach_is_the_farthest_tcp_within_the_joint_limits(name):
    # 20,000 other random configurations within the URDF's joint limits (TCP by FK of the
    # chain, which tests/agents matches against PhysX): none lies beyond the reach, and
    # the farthest comes within 1 cm of it
    spec = get_robot_spec(name)
    caps = robot_capabilities(spec)
    urdf = RobotModel.for_spec(spec).urdf_path
    chain = SerialChain(urdf, spec.root_link, spec.tcp_link, spec.tcp_offset)
    joints = {j.get("name"): j.find("limit") for j in ET.parse(urdf).getroot().findall("joint")}
    low = torch.tensor([float(joints[n].get("lower")) for n in chain.joint_names], dtype=torch.float64)
    high = torch.tensor([float(joints[n].get("upper")) for n in chain.joint_names], dtype=torch.float64)
    q = low + (high - low) * torch.rand(20000, chain.dof, generator=torch.Generator().manual_seed(1),
                                        dtype=torch.float64)
    distance = (chain.forward(q)[0] - torch.tensor(caps.reach_origin, dtype=torch.float64)).norm(dim=1)
    assert caps.reach - 0.01 <= float(distance.max()) <= caps.reach + 1e-9


@pytest.mark.parametrize("spec, words", [
    (_panda_copy("handless", gripper=None, rest_qpos=get_robot_spec("panda").rest_qpos[:7]),
     ["robot 'handless' cannot run PickCubeTask", "needs a gripper, has none"]),
    (_panda_copy("far_away", base_position=(-2.0, 0.0, 0.0)),
     ["robot 'far_away' cannot run PickCubeTask", "needs a reach of"]),
    (_panda_copy("narrow", gripper=dataclasses.replace(get_robot_spec("panda").gripper, width_open=0.03)),
     ["robot 'narrow' cannot run PickCubeTask", "needs a gripper opening to >= 0.050 m", "opening to 0.030 m"]),
])
def test_a_robot_lacking_a_capability_is_refused_by_make(spec, words):
    register_robot(spec)
    with pytest.raises(ValueError) as err:
        robosim.make("PickCube-v1", num_envs=1, robot=spec.name)
    for word in words + ["registered robots that can:", "'panda'"]:
        assert word in str(err.value)


def test_five_joint_arms_are_refused_where_the_task_turns_the_gripper():
    with pytest.raises(ValueError, match="robot 'koch' cannot run LiftPegUprightTask: the task needs an arm with "
                                         ">= 6 joints, has 5"):
        check_robot_for_task(robosim.get_task("LiftPegUpright-v1"), "koch")
    # PushCube needs the TCP's position only: so100 has what it needs, and is refused only
    # in the orientation mode it cannot follow
    assert check_robot_for_task(robosim.get_task("PushCube-v1"), "so100").robot == "so100"
    with pytest.raises(ValueError, match="control_mode must be one that robot 'so100' supports"):
        robosim.make("PushCube-v1", num_envs=1, robot="so100", control_mode="pd_ee_delta_pose")


def test_one_jaw_grippers_are_refused_where_the_task_grasps():
    with pytest.raises(ValueError, match="robot 'so100' cannot run PickCubeTask: the task needs a parallel gripper "
                                         r"\(both jaws move, closing on the TCP\), has one moving jaw"):
        robosim.make("PickCube-v1", num_envs=1, robot="so100", control_mode="pd_ee_delta_pos")


def test_per_slot_requirements():
    class TwoSlots(Task):
        requires = {"left": Requirements(gripper=True), "right": Requirements(min_arm_dof=7)}

    assert check_robot_for_task(TwoSlots, "so100", slot="left").robot == "so100"
    with pytest.raises(ValueError, match=r"robot\['right'\] 'so100' cannot run TwoSlots: the task needs an arm "
                                         r"with >= 7 joints, has 5"):
        check_robot_for_task(TwoSlots, "so100", slot="right")
    with pytest.raises(ValueError, match=r"slot must be one of the robot slots TwoSlots.requires names, "
                                         r"\['left', 'right'\], got 'middle'"):
        check_robot_for_task(TwoSlots, "panda", slot="middle")


def test_supported_robots_is_deprecated_but_still_enforced():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class Legacy(Task):
            supported_robots = ("panda",)

    assert any(issubclass(w.category, DeprecationWarning) and "Legacy.supported_robots is deprecated" in str(w.message)
               for w in caught)
    with pytest.raises(ValueError, match=r"robot must be one that Legacy supports, one of \['panda'\], got 'xarm7'"):
        check_robot_for_task(Legacy, "xarm7")


@pytest.mark.parametrize("kwargs, words", [
    (dict(workspace=((0.1, 0.0, 0.0), (0.0, 0.1, 0.1))), ["Requirements.workspace", "low <= high"]),
    (dict(min_gripper_opening=0.05), ["min_gripper_opening and parallel_gripper need gripper=True"]),
])
def test_bad_requirements_are_refused(kwargs, words):
    with pytest.raises(ValueError) as err:
        Requirements(**kwargs)
    for word in words:
        assert word in str(err.value)
