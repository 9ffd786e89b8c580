"""The replay ceiling is robosim's own run in bare PhysX: stepped in lockstep with a
robosim benchmark env, fed the drive targets robosim's controller set, the plain-SAPIEN
scene of robosim.bench.ceiling ends in the same joint positions and cube poses, bit for
bit. If PickCube's scene or physics settings drift from the ceiling's, the ratio to the
ceiling stops meaning "robosim's overhead" and this test fails."""
import numpy as np
import pytest

from robosim.bench.cases import Case


@pytest.mark.parametrize("control_mode", ["pd_ee_delta_pose", "pd_joint_delta_pos"])
def test_the_lockstep_ceiling_repeats_robosims_physics_bit_for_bit(control_mode):
    robosim_case = Case("robosim", control_mode, 2, "step")
    robosim_case.setup()
    replay = Case("ceiling", control_mode, 2, "replay", replays=robosim_case)
    replay.setup()
    try:
        result = replay.run_block(0.0, 20, seed=7)     # 20 steps: one episode, no reset inside
        assert result.env_steps == 40 and len(replay.paired) == 1 and replay.paired[0] > 0
        env, ceiling = robosim_case._runner.env, replay._runner.ceiling
        np.testing.assert_array_equal(ceiling.qpos(), env.robot.view.qpos().numpy())
        np.testing.assert_array_equal(ceiling.cube_poses(), env.task.cube.pose().numpy())
        start = env.robot.view.qpos().numpy()
        replay.run_block(0.0, 60, seed=8)              # across an episode reset (every 50 steps)
        assert not np.array_equal(start, env.robot.view.qpos().numpy())
        np.testing.assert_array_equal(ceiling.qpos(), env.robot.view.qpos().numpy())
        np.testing.assert_array_equal(ceiling.cube_poses(), env.task.cube.pose().numpy())
    finally:
        replay.close()
        robosim_case.close()
