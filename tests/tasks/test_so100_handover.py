"""SO100Handover-v1 (tasks/so100_handover.py): the scripted solution succeeds, its first
half (left lifts the bar and carries it to the handover point), the geometry the handover
relies on, exact replay of a recording in separate isolation and a LeRobot export that
records both arms."""
import math

import pytest
import torch
from two_arm_checks import assert_export_names_both_arms, record_scripted

import robosim
import robosim_tasks.so100_handover as handover  # noqa: F401  (registers the task in a tree never pip-installed)
from robosim.record.replay import replay


def test_handover_points_let_both_arms_point_across_the_bar():
    points = handover.handover_points()
    left, right = torch.tensor(points["left"][:2]), torch.tensor(points["right"][:2])
    bar = (right - left) / torch.linalg.vector_norm(right - left)
    assert math.isclose(float(torch.linalg.vector_norm(right - left)), 2 * handover.GRIP_OFFSET, abs_tol=1e-6)
    for slot, tcp in (("left", left), ("right", right)):
        heading = tcp - torch.tensor(handover.shoulder(slot))
        # each arm's jaws close along its heading: across the bar
        assert abs(float(heading @ bar)) < 1e-6
        assert math.isclose(float(torch.linalg.vector_norm(heading)), handover._ACROSS,
                            abs_tol=1e-6)


def test_scripted_solution_succeeds():
    # separate isolation: each env's run depends on its seed alone (in one shared scene the
    # batch's make-up moves the contacts a little, and the outcome of a grasp with it)
    env = robosim.make("SO100Handover-v1", num_envs=8, seed=0, physics_isolation="separate")
    try:
        env.reset(seed=list(range(8)))
        policy = env.task.solution_policy()
        success = torch.zeros(8, dtype=torch.bool)
        for _ in range(env.max_episode_steps):
            _, _, _, _, info = env.step(policy())
            success |= info["success"]
        assert success.all(), f"failed in envs {(~success).nonzero().flatten().tolist()}"
    finally:
        env.close()


def test_left_lifts_the_bar_and_carries_it_to_the_handover_point():
    env = robosim.make("SO100Handover-v1", num_envs=4, seed=0)
    try:
        env.reset(seed=[0, 1, 2, 3])
        policy = env.task.solution_policy()
        height = torch.full((4,), float("nan"))
        for _ in range(120):
            _, _, _, _, info = env.step(policy())
            arrived = (policy.phase >= handover.R_ABOVE) & height.isnan()
            height[arrived] = info["bar_height"][arrived]
            if not height.isnan().any():
                break
        assert not height.isnan().any(), f"phases {policy.phase.tolist()}"
        # held in the air: the tcps meet 7 cm up, the bar about 4 cm above where it rests
        assert (height > 0.02).all(), height.tolist()
        left_tcp = env.robots["left"].tcp_pose()[:, :3]
        target = torch.tensor(handover.handover_points()["left"])
        assert (torch.linalg.vector_norm(left_tcp - target, dim=1) < 0.03).all()
    finally:
        env.close()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """30 scripted steps of 2 envs (separate isolation): the left arm's pick, its jaws closing on the bar."""
    return record_scripted(str(tmp_path_factory.mktemp("so100") / "handover.h5"), "SO100Handover-v1", 30)


def test_replay_of_a_recording_is_exact_in_separate_isolation(recording):
    report = replay(recording)
    assert report.episodes == 2 and report.worst == 0.0


def test_lerobot_export_records_both_arms(recording, tmp_path):
    # pd_joint_pos: 5 arm joints + the jaw per arm; the state is 6 joints per arm
    assert_export_names_both_arms(recording, str(tmp_path / "dataset"), "left=so100,right=so100", 6, 6,
                                  "shoulder_pan")
