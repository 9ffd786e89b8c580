"""A control mode per robot slot (robosim.envs.robots.check_control_mode_field): spaces
sized by each slot's mode, stepping, the spec's round trip, recording, replay, LeRobot
export, scripted solutions and bad input."""
import json
import os

import gymnasium as gym
import pytest
import torch

import robosim
import robosim_tasks.two_arm_lift  # noqa: F401  (registers TwoArmLift-v1 in a tree never pip-installed)
from robosim.envs.spec import EnvSpec
from robosim.record.replay import replay
from robosim.record.wrapper import RecordEpisode
from robosim.sim import SimScene

LIFT = "TwoArmLift-v1"
MIXED = {"left": "pd_ee_delta_pose", "right": "pd_joint_delta_pos"}


@pytest.fixture(scope="module")
def env():
    e = robosim.make(LIFT, num_envs=2, control_mode=MIXED, seed=3)
    yield e
    e.close()


def test_each_slot_has_its_own_mode_and_action_shape(env):
    assert {slot: r.control_mode for slot, r in env.robots.items()} == MIXED
    assert isinstance(env.single_action_space, gym.spaces.Dict)
    # panda: 6 end-effector numbers + gripper; 7 joint deltas + gripper
    assert env.single_action_space["left"].shape == (7,) and env.single_action_space["right"].shape == (8,)
    assert env.single_flat_action_space.shape == (15,) and env.header()["action_dim"] == 15
    assert env.header()["control_mode"] == MIXED


def test_each_arm_moves_as_its_mode_says(env):
    env.reset(seed=1)
    start = env.save_state()
    before = {slot: (r.qpos[:, :7].clone(), r.tcp_pose()[:, :3].clone()) for slot, r in env.robots.items()}
    up = torch.zeros(2, 7)
    up[:, 2] = 1.0   # left: tcp up (+z, env frame), the rest held
    action = {"left": up, "right": torch.zeros(2, 8)}   # right: zero joint deltas hold every joint
    for _ in range(3):
        env.step(action)
    rise = env.robots["left"].tcp_pose()[:, :3] - before["left"][1]
    assert torch.all(rise[:, 2] > 0.02), rise
    assert torch.all(rise[:, :2].abs().amax(dim=1) < 0.3 * rise[:, 2]), rise   # mostly straight up
    assert (env.robots["right"].qpos[:, :7] - before["right"][0]).abs().max() < 0.005
    # the flat view concatenates left (7) then right (8)
    by_dict = env.get_state()
    env.restore_state(start)
    for _ in range(3):
        env.step(torch.cat([up, torch.zeros(2, 8)], dim=1))
    assert torch.equal(env.get_state(), by_dict)
    # a joint delta on the right arm's first joint turns that joint only
    env.restore_state(start)
    turn = torch.zeros(2, 8)
    turn[:, 0] = 1.0
    q0 = env.robots["right"].qpos[:, :7].clone()
    env.step({"left": torch.zeros(2, 7), "right": turn})
    moved = env.robots["right"].qpos[:, :7] - q0
    assert torch.all(moved[:, 0] > 0.01) and moved[:, 1:].abs().max() < 0.5 * moved[:, 0].min()


def test_the_spec_stores_the_modes_json_ably():
    spec = EnvSpec(LIFT, control_mode={"right": "pd_joint_pos", "left": "pd_ee_delta_pos"})
    assert list(spec.control_mode) == ["left", "right"]   # slot order
    again = EnvSpec.from_json(spec.resolved().to_json())
    assert again.control_mode == {"left": "pd_ee_delta_pos", "right": "pd_joint_pos"}
    assert EnvSpec(LIFT, control_mode="pd_joint_pos").resolved().control_mode == "pd_joint_pos"   # a str: all


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(control_mode={"left": "pd_ee_delta_pose"}), ValueError,
     ["control_mode as a dict must name every robot slot", "['left', 'right']", "missing: ['right']"]),
    (dict(control_mode={**MIXED, "middle": "pd_joint_pos"}), ValueError, ["control_mode", "unknown: ['middle']"]),
    (dict(control_mode={"left": "pd_fly", "right": "pd_joint_pos"}), ValueError,
     ["control_mode['left'] must be one of", "pd_joint_delta_pos", "got 'pd_fly'"]),
    (dict(control_mode={"left": 3, "right": "pd_joint_pos"}), TypeError,
     ["control_mode['left'] must be a control mode name (str)", "got 3 (int)"]),
    (dict(control_mode=("pd_joint_pos",)), TypeError,
     ["control_mode must be a control mode name (str)", "a dict {slot: mode}", "(tuple)"]),
    (dict(robot={"right": "so100"}, control_mode={"left": "pd_joint_pos", "right": "pd_ee_delta_pose"}), ValueError,
     ["control_mode['right'] must be one that robot 'so100' (slot 'right') supports", "'pd_ee_delta_pos'",
      "got 'pd_ee_delta_pose'"]),
    (dict(task="PickCube-v1", control_mode={"robot": "pd_joint_pos"}), ValueError,
     ["control_mode must be a control mode name for PickCubeTask (it places one robot)"]),
])
def test_bad_control_modes_are_refused_before_building(kwargs, error, words, monkeypatch):
    scenes = []
    real = SimScene.__init__
    monkeypatch.setattr(SimScene, "__init__", lambda self, *a, **k: scenes.append(a) or real(self, *a, **k))
    task = kwargs.pop("task", LIFT)
    with pytest.raises(error) as err:
        robosim.make(task, num_envs=1, **kwargs)
    for word in words:
        assert word in str(err.value), (word, str(err.value))
    assert scenes == []   # refused before any scene was built


def test_scripted_solution_refuses_a_joint_mode_slot_naming_the_robot(env):
    env.reset(seed=0)
    policy = env.task.solution_policy()
    with pytest.raises(ValueError, match=r"scripted policies need the robot's control_mode in .*got "
                                         r"'pd_joint_delta_pos' \(robot 'right_panda'\)"):
        policy()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """2 envs of TwoArmLift-v1 with mixed modes (separate isolation), 8 random steps."""
    path = str(tmp_path_factory.mktemp("mixed") / "lift.h5")
    env = RecordEpisode(robosim.make(LIFT, num_envs=2, control_mode=MIXED, physics_isolation="separate", seed=1),
                        trajectory=path)
    env.reset(seed=[11, 12])
    gen = torch.Generator().manual_seed(0)
    for _ in range(8):
        env.step(torch.rand(2, 15, generator=gen) * 2 - 1)
    env.close()
    return path


def test_replay_of_a_mixed_mode_recording_is_exact(recording):
    report = replay(recording)
    assert report.episodes == 2 and report.worst == 0.0


def test_lerobot_export_names_each_arms_actions_by_its_mode(recording, tmp_path):
    pytest.importorskip("pyarrow.parquet")
    from robosim.demos.lerobot import export_lerobot

    out = str(tmp_path / "dataset")
    export_lerobot(recording, out, video=False, progress=False)
    info = json.load(open(os.path.join(out, "meta/info.json")))
    features = info["features"]
    assert features["action.left"]["shape"] == [7] and features["action.right"]["shape"] == [8]
    assert features["action.left"]["names"][0] == "pd_ee_delta_pose_0"
    assert features["action.right"]["names"][0] == "pd_joint_delta_pos_7"
    assert info["robosim"]["control_mode"] == MIXED and info["robosim"]["env_spec"]["control_mode"] == MIXED


def test_demos_generate_with_two_end_effector_modes(tmp_path):
    """TwoArmReach's solution steers each tcp by ee_action, which follows its robot's mode
    (pd_ee_delta_pose also holds the wrist's rotation)."""
    import robosim_tasks.two_arm_reach  # noqa: F401
    from robosim.demos.generate import generate_demos

    modes = {"left": "pd_ee_delta_pose", "right": "pd_ee_delta_pos"}
    made = generate_demos("TwoArmReach-v1", 2, str(tmp_path / "ee.h5"), num_envs=2, seed=0, robot="panda",
                          control_mode=modes)
    assert made.kept == 2
    assert replay(str(tmp_path / "ee.h5")).worst == 0.0
