"""SO100Handover-v1 (work in progress, tasks/so100_handover.py): the part of the scripted
solution that works (left grasps the bar, lifts it and carries it to the handover point)
and the geometry the handover relies on."""
import math

import torch

import robosim
import robosim_tasks.so100_handover as handover  # noqa: F401  (registers the task; not yet in setup.cfg)


def test_handover_points_let_both_arms_point_across_the_bar():
    points = handover.handover_points()
    left, right = torch.tensor(points["left"][:2]), torch.tensor(points["right"][:2])
    bar = (right - left) / torch.linalg.vector_norm(right - left)
    assert math.isclose(float(torch.linalg.vector_norm(right - left)), 2 * handover.GRIP_OFFSET, abs_tol=1e-6)
    for slot, tcp in (("left", left), ("right", right)):
        heading = tcp - torch.tensor(handover.shoulder(slot))
        # each arm's jaws close along its heading: across the bar
        assert abs(float(heading @ bar)) < 1e-6
        assert math.isclose(float(torch.linalg.vector_norm(heading)), handover.REACH * math.cos(handover._TURN),
                            abs_tol=1e-6)


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
        assert (height > 0.06).all(), height.tolist()   # held in the air at the handover height (10 cm)
        left_tcp = env.robots["left"].tcp_pose()[:, :3]
        target = torch.tensor(handover.handover_points()["left"])
        assert (torch.linalg.vector_norm(left_tcp - target, dim=1) < 0.03).all()
    finally:
        env.close()
