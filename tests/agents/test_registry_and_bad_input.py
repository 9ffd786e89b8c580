"""The robot registry (in-process and entry points), a third-party robot end to end, and
the errors for bad robot input, raised before any scene is built."""
from __future__ import annotations

import dataclasses
import sys
import textwrap

import pytest
import torch

import robosim
from robosim.agents import RobotSpec, get_robot_spec, register_robot
from robosim.sim import SimScene

# a 4-joint arm made of primitives, no gripper: the smallest thing a third party could ship
TOY_URDF = """<?xml version="1.0"?>
<robot name="toy_arm">
  <link name="base"><collision><geometry><box size="0.1 0.1 0.05"/></geometry></collision></link>
  {links}
  <link name="tcp"/>
  <joint name="tcp_joint" type="fixed"><origin xyz="0 0 0.12"/><parent link="l4"/><child link="tcp"/></joint>
</robot>"""
_LINK = """<link name="l{i}"><inertial><mass value="0.5"/>
  <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><geometry><cylinder radius="0.03" length="0.2"/></geometry></visual></link>
  <joint name="j{i}" type="revolute"><origin xyz="0 0 {z}" rpy="0 0 0"/><axis xyz="{axis}"/>
  <parent link="{parent}"/><child link="l{i}"/><limit lower="-2.5" upper="2.5" effort="100" velocity="2"/></joint>"""


def _toy_urdf(tmp_path) -> str:
    axes = ["0 0 1", "0 1 0", "0 1 0", "0 1 0"]
    links = "\n".join(_LINK.format(i=i + 1, z=0.05 if i == 0 else 0.2, axis=axes[i],
                                    parent="base" if i == 0 else f"l{i}")
                      for i in range(4))
    path = tmp_path / "toy_arm.urdf"
    path.write_text(TOY_URDF.format(links=links))
    return str(path)


def _toy_spec(name: str, urdf: str) -> RobotSpec:
    return RobotSpec(name=name, urdf=urdf, root_link="base", arm_joints=("j1", "j2", "j3", "j4"), tcp_link="tcp",
                     rest_qpos=(0.0, 0.5, 0.8, 0.9), base_position=(-0.3, 0.0, 0.0),
                     control_modes=("pd_joint_pos", "pd_joint_delta_pos", "pd_ee_delta_pos"))


@pytest.fixture
def builds(monkeypatch):
    """Counts the scenes constructed (every backend's scene is a SimScene; the real
    constructor still runs)."""
    calls = []
    real = SimScene.__init__

    def counting(self, *args, **kwargs):
        calls.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SimScene, "__init__", counting)
    return calls


def test_list_robots_and_make_with_each_robot_on_reach():
    assert robosim.list_robots() == sorted(robosim.list_robots())
    for name in ("panda", "xarm7", "so100", "koch"):
        env = robosim.make("Reach-v1", num_envs=2, robot=name)
        obs, _ = env.reset(seed=0)
        spec = get_robot_spec(name)
        assert obs["observation"].shape[0] == 2
        assert env.single_action_space.shape == (3 + (1 if spec.gripper else 0),)
        assert env.robot.view.qpos().shape == (2, spec.dof)
        env.close()


def test_robot_base_is_placed_at_build_time():
    env = robosim.make("Reach-v1", num_envs=3, robot="so100")
    spec = get_robot_spec("so100")
    expected = torch.tensor([*spec.base_position, *spec.base_quat]).expand(3, 7)
    torch.testing.assert_close(env.robot.view.root_pose(), expected, atol=1e-6, rtol=0)   # no reset yet
    env.close()


def test_robot_model_is_parsed_once_per_process(monkeypatch):
    import sapien.wrapper.urdf_loader as urdf_loader

    parses = []
    real = urdf_loader.URDFLoader.parse
    monkeypatch.setattr(urdf_loader.URDFLoader, "parse", lambda self, *a, **k: parses.append(a) or real(self, *a, **k))
    robosim.make("Reach-v1", num_envs=1, robot="koch").close()
    before = len(parses)
    env = robosim.make("Reach-v1", num_envs=8, robot="koch")
    env.reset(seed=0, options={"reconfigure": True})
    env.close()
    assert before <= 1 and len(parses) == before   # 8 envs and a rebuild parsed nothing more


def test_third_party_robot_registered_in_process_works(tmp_path):
    spec = register_robot(_toy_spec("toy_arm_test", _toy_urdf(tmp_path)))
    assert "toy_arm_test" in robosim.list_robots()
    env = robosim.make("Reach-v1", num_envs=2, robot="toy_arm_test", control_mode="pd_ee_delta_pos")
    env.reset(seed=0)
    assert env.single_action_space.shape == (3,)      # no gripper: no gripper action
    start = env.robot.tcp_pose()
    for _ in range(3):
        env.step(torch.tensor([[0.0, 0.0, -0.5]] * 2))
    assert (env.robot.tcp_pose()[:, 2] < start[:, 2] - 0.02).all()   # it moved down
    torch.testing.assert_close(env.robot.tcp_pose()[:, :3], env.robot.view.link_pose("tcp")[:, :3], atol=1e-4, rtol=0)
    assert env.robot.gripper_width(env.robot.view.qpos()).eq(0).all()
    env.close()
    assert spec is get_robot_spec("toy_arm_test")


def test_third_party_robot_through_the_entry_point_group(tmp_path, monkeypatch):
    urdf = _toy_urdf(tmp_path)
    (tmp_path / "toy_robot_pkg.py").write_text(textwrap.dedent(f"""
        from robosim.agents import RobotSpec
        TOY = RobotSpec(name="toy_arm_ep", urdf={urdf!r}, root_link="base", arm_joints=("j1", "j2", "j3", "j4"),
                        tcp_link="tcp", rest_qpos=(0.0, 0.5, 0.8, 0.9), base_position=(-0.3, 0.0, 0.0),
                        control_modes=("pd_joint_pos", "pd_ee_delta_pos"))
    """))
    dist = tmp_path / "toy_robot_pkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-robot-pkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[robosim.robots]\ntoy_arm_ep = toy_robot_pkg:TOY\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "toy_arm_ep" in robosim.list_robots()
    env = robosim.make("Reach-v1", num_envs=1, robot="toy_arm_ep")
    env.reset(seed=0)
    env.step(torch.zeros(1, 3))
    env.close()
    sys.modules.pop("toy_robot_pkg", None)


def test_the_build_counter_sees_a_build(builds):
    robosim.make("Reach-v1", num_envs=1).close()
    assert len(builds) == 1


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(robot="no_such_robot"), ValueError, ["robot must be one of", "'no_such_robot'", "panda"]),
    (dict(robot=3), TypeError, ["robot must be a robot name (str)", "panda", "got 3 (int)"]),
    (dict(task="PickCube-v1", robot="koch"), ValueError,   # capabilities: the goals are beyond its reach
     ["robot 'koch' cannot run PickCubeTask", "needs a reach of", "registered robots that can:", "xarm7"]),
    (dict(robot="so100", control_mode="pd_ee_delta_pose"), ValueError,
     ["control_mode must be one that robot 'so100' supports", "pd_ee_delta_pos", "'pd_ee_delta_pose'"]),
])
def test_bad_robot_input_is_refused_before_building(builds, kwargs, error, words):
    task = kwargs.pop("task", "Reach-v1")
    with pytest.raises(error) as err:
        robosim.make(task, num_envs=1, **kwargs)
    for word in words:
        assert word in str(err.value)
    assert builds == []


@pytest.mark.parametrize("content, words", [
    (None, ["RobotSpec.urdf must be the path of an existing URDF file", "missing.urdf"]),
    ("<robot name='x'><link name='base'></robot", ["RobotSpec.urdf must be a parsable URDF file", "broken.urdf"]),
    ("<robot name='x'><link name='base'/></robot>", ["every link it names must be in", "'tcp'"]),
])
def test_bad_urdf_is_refused_before_building(tmp_path, builds, content, words):
    path = tmp_path / ("missing.urdf" if content is None else "broken.urdf")
    if content is not None:
        path.write_text(content)
    name = f"bad_{tmp_path.name}"
    register_robot(_toy_spec(name, str(path)))
    with pytest.raises(ValueError) as err:
        robosim.make("Reach-v1", num_envs=1, robot=name, control_mode="pd_ee_delta_pos")
    for word in words:
        assert word in str(err.value)
    assert builds == []


def test_inconsistent_spec_is_refused_at_registration(tmp_path):
    good = _toy_spec("toy_arm_bad", _toy_urdf(tmp_path))
    with pytest.raises(ValueError, match="rest_qpos of 'toy_arm_bad' must have 4 entries"):
        register_robot(RobotSpec(**{**good.__dict__, "rest_qpos": (0.0, 0.0)}))
    with pytest.raises(ValueError, match=r"need >= 6 arm joints, the arm has 4"):
        register_robot(RobotSpec(**{**good.__dict__, "control_modes": ("pd_ee_delta_pose",)}))
    with pytest.raises(ValueError, match="stiffness of 'toy_arm_bad' must be a positive number, got -1"):
        register_robot(RobotSpec(**{**good.__dict__, "stiffness": -1.0}))
    with pytest.raises(ValueError, match=r"ee_max_rot of 'toy_arm_bad' must be < pi / sqrt\(3\) rad .*got 2.0"):
        register_robot(RobotSpec(**{**good.__dict__, "ee_max_rot": 2.0}))
    assert "toy_arm_bad" not in robosim.list_robots()
    panda = get_robot_spec("panda")
    squeeze = dataclasses.replace(panda.gripper, hold=-1.5)
    with pytest.raises(ValueError, match=r"gripper.hold of 'panda_bad' must be a number in \[-1, 1\].*got -1.5"):
        register_robot(RobotSpec(**{**panda.__dict__, "name": "panda_bad", "gripper": squeeze}))
    assert "panda_bad" not in robosim.list_robots()
