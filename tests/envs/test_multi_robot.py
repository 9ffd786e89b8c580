"""Several robots in one env (robosim.envs.robots): slots, spaces, the flat action view,
robot choice per slot, seeding, recording, replay and LeRobot export."""

import gymnasium as gym
import pytest
import torch
from two_arm_checks import assert_export_names_both_arms, record_scripted

import robosim
import robosim_tasks.two_arm_lift  # noqa: F401  (registers TwoArmLift-v1 in a tree never pip-installed)
from robosim.envs.spec import EnvSpec
from robosim.record.replay import replay

LIFT = "TwoArmLift-v1"


@pytest.fixture(scope="module")
def env():
    e = robosim.make(LIFT, num_envs=2, obs_mode="state_dict", seed=3)
    yield e
    e.close()


def test_action_space_is_a_dict_per_slot_with_a_flat_view(env):
    assert list(env.robots) == ["left", "right"]
    assert isinstance(env.single_action_space, gym.spaces.Dict)
    assert list(env.single_action_space.spaces) == ["left", "right"]
    # pd_ee_delta_pose: 6 end-effector numbers and a gripper per panda
    assert env.single_action_space["left"].shape == (7,) and env.single_action_space["right"].shape == (7,)
    assert env.single_flat_action_space.shape == (14,) and env.flat_action_space.shape == (2, 14)
    assert env.header()["action_dim"] == 14
    obs, _ = env.reset(seed=0)
    assert set(obs["agent"]) == {"left", "right"}
    for slot in ("left", "right"):
        assert obs["agent"][slot]["qpos"].shape == (2, 9) and obs["agent"][slot]["tcp_pose"].shape == (2, 7)
    # the two bases stand 0.6 m apart (the task's slots), so the tcps do too
    gap = obs["agent"]["left"]["tcp_pose"][:, 1] - obs["agent"]["right"]["tcp_pose"][:, 1]
    assert torch.all((gap > 0.5) & (gap < 0.7))


def test_a_dict_action_and_its_flat_view_step_alike(env):
    gen = torch.Generator().manual_seed(0)
    left, right = torch.rand(2, 7, generator=gen) * 2 - 1, torch.rand(2, 7, generator=gen) * 2 - 1
    env.reset(seed=1)
    start = env.save_state()
    env.step({"right": right, "left": left})   # key order does not matter: slots are named
    by_dict = env.get_state()
    env.restore_state(start)
    env.step(torch.cat([left, right], dim=1))
    assert torch.equal(env.get_state(), by_dict)
    # each robot takes its own part: a zero end-effector command holds the right arm still
    env.restore_state(start)
    before = {slot: r.qpos[:, :7] for slot, r in env.robots.items()}
    env.step({"left": torch.ones(2, 7), "right": torch.zeros(2, 7)})
    assert (env.robots["left"].qpos[:, :7] - before["left"]).abs().max() > 0.02
    assert (env.robots["right"].qpos[:, :7] - before["right"]).abs().max() < 0.005


def test_a_dict_action_with_a_missing_slot_or_shape_is_refused(env):
    env.reset(seed=1)
    with pytest.raises(ValueError, match=r"one entry per robot slot \['left', 'right'\], got keys \['left'\]"):
        env.step({"left": torch.zeros(2, 7)})
    with pytest.raises(ValueError, match=r"action\['right'\] must have shape \(num_envs, 7\), got \(2, 6\)"):
        env.step({"left": torch.zeros(2, 7), "right": torch.zeros(2, 6)})


def test_robot_is_refused_by_name_for_a_multi_robot_env(env):
    with pytest.raises(ValueError, match=r"several robots \(\['left', 'right'\]\).*robots\[slot\]"):
        _ = env.robot
    with pytest.raises(ValueError, match=r"several robots"):
        _ = env.task.ctx.robot
    assert env.task.ctx.robots["left"] is env.robots["left"]


def test_robot_per_slot_is_chosen_and_stored_json_ably():
    spec = EnvSpec(LIFT, robot={"left": "xarm7"})
    assert spec.resolved().robot == {"left": "xarm7", "right": "panda"}
    assert EnvSpec(LIFT, robot="xarm7").resolved().robot == {"left": "xarm7", "right": "xarm7"}
    again = EnvSpec.from_json(spec.resolved().to_json())
    assert again.robot == {"left": "xarm7", "right": "panda"}
    e = robosim.make(LIFT, num_envs=1, robot={"left": "xarm7"})
    try:
        assert e.robots["left"].spec.name == "xarm7" and e.robots["right"].spec.name == "panda"
        assert e.single_action_space["left"].shape == (7,)
    finally:
        e.close()


def test_bad_robot_choices_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"slot\(s\) \['middle'\] that TwoArmLiftTask does not declare.*"
                                         r"\['left', 'right'\]"):
        EnvSpec(LIFT, robot={"middle": "panda"})
    with pytest.raises(ValueError, match=r"robot\['right'\].*'no_such_arm'"):
        EnvSpec(LIFT, robot={"right": "no_such_arm"})
    with pytest.raises(ValueError, match=r"robot must be a robot name for PickCubeTask \(it places one robot\)"):
        EnvSpec("PickCube-v1", robot={"left": "panda"})
    with pytest.raises(TypeError, match=r"robot\['left'\] must be a robot name \(str\), got int"):
        EnvSpec(LIFT, robot={"left": 3})


def test_env_i_depends_only_on_its_own_seed_and_partial_reset():
    a = robosim.make(LIFT, num_envs=2, seed=0)
    b = robosim.make(LIFT, num_envs=2, seed=0)
    try:
        a.reset(seed=[5, 6])
        b.reset(seed=[7, 6])
        assert torch.equal(a.get_state()[1], b.get_state()[1])
        assert not torch.equal(a.get_state()[0], b.get_state()[0])
        fresh = a.get_state()[0].clone()
        for _ in range(3):
            a.step(torch.rand(2, 14) * 2 - 1)
        a.reset(seed=[5], options={"env_idx": [0]})
        torch.testing.assert_close(a.get_state()[0], fresh, atol=1e-5, rtol=0)
        assert int(a.elapsed_steps[0]) == 0 and int(a.elapsed_steps[1]) == 3
    finally:
        a.close()
        b.close()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """12 scripted steps of 2 envs of TwoArmLift-v1 (separate isolation)."""
    return record_scripted(str(tmp_path_factory.mktemp("multi") / "lift.h5"), LIFT, 12)


def test_replay_of_a_recording_is_exact_in_separate_isolation(recording):
    report = replay(recording)
    assert report.episodes == 2 and report.worst == 0.0


def test_lerobot_export_records_both_arms(recording, tmp_path):
    # the right arm's joints, as re-derived from the recorded states, are its own (not the left's)
    assert_export_names_both_arms(recording, str(tmp_path / "dataset"), "left=panda,right=panda", 7, 9,
                                  "panda_joint1")


def test_demos_generate_and_convert_a_multi_robot_task(tmp_path):
    from robosim.demos.convert import convert_demos
    from robosim.demos.generate import generate_demos

    made = generate_demos(LIFT, 2, str(tmp_path / "ee.h5"), num_envs=2, seed=0)
    assert made.kept == 2 and made.robot == "left=panda,right=panda"
    # joint-space actions for both arms, re-derived from the recorded drive targets
    converted = convert_demos(str(tmp_path / "ee.h5"), str(tmp_path / "joint.h5"), "pd_joint_delta_pos")
    assert converted.success == [True, True]
