"""SO100Handover-v1 (tasks/so100_handover.py): the scripted solution succeeds, its first
half (left lifts the bar and carries it to the handover point), the geometry the handover
relies on, exact replay of a recording in separate isolation and a LeRobot export that
records both arms."""
import json
import math
import os

import numpy as np
import pytest
import torch

import robosim
import robosim_tasks.so100_handover as handover  # noqa: F401  (registers the task in a tree never pip-installed)
from robosim.record.replay import replay
from robosim.record.wrapper import RecordEpisode


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
    """A recording of 2 envs of SO100Handover-v1 (separate isolation), 30 scripted steps
    (the left arm's pick: its jaws close on the bar)."""
    path = str(tmp_path_factory.mktemp("so100") / "handover.h5")
    env = RecordEpisode(robosim.make("SO100Handover-v1", num_envs=2, physics_isolation="separate", seed=1),
                        trajectory=path)
    env.reset(seed=[11, 12])
    policy = env.task.solution_policy()
    for _ in range(30):
        env.step(policy())
    env.close()
    return path


def test_replay_of_a_recording_is_exact_in_separate_isolation(recording):
    report = replay(recording)
    assert report.episodes == 2 and report.worst == 0.0


def test_lerobot_export_records_both_arms(recording, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from robosim.demos.lerobot import export_lerobot
    from robosim.record.trajectory import TrajectoryFile

    out = str(tmp_path / "dataset")
    export_lerobot(recording, out, video=False, progress=False)
    info = json.load(open(os.path.join(out, "meta/info.json")))
    features = info["features"]
    assert info["robot_type"] == "left=so100,right=so100"
    # pd_joint_pos: 5 arm joints + the jaw per arm; the state is 6 joints per arm
    assert features["action"]["shape"] == [12] and features["observation.state"]["shape"] == [12]
    assert features["action.left"]["shape"] == [6] and features["action.right"]["shape"] == [6]
    assert features["observation.state.left"]["names"][0] == "shoulder_pan"
    assert features["observation.state"]["names"][6] == "right.shoulder_pan"
    data = pq.read_table(os.path.join(out, "data/chunk-000/file-000.parquet")).to_pandas()
    episode = TrajectoryFile(recording).episode(0)
    first = data["episode_index"] == 0
    np.testing.assert_array_equal(np.stack(data["action.left"][first]), episode.actions[:, :6])
    np.testing.assert_array_equal(np.stack(data["action.right"][first]), episode.actions[:, 6:])
    left = np.stack(data["observation.state.left"][first])
    assert not np.array_equal(left, np.stack(data["observation.state.right"][first]))
