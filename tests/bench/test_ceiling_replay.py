"""The replay ceiling is robosim's own run in bare PhysX: the drive targets a robosim
benchmark block recorded, replayed in the plain-SAPIEN scene of robosim.bench.ceiling,
end in the same joint positions and cube poses, bit for bit. If PickCube's scene or
physics settings drift from the ceiling's, the ratio to the ceiling stops meaning
"robosim's overhead" and this test fails."""
import numpy as np
import pytest

from robosim.bench.cases import Case
from robosim.bench.ceiling import PhysxCeiling


@pytest.mark.parametrize("control_mode", ["pd_ee_delta_pose", "pd_joint_delta_pos"])
def test_replaying_a_recorded_block_repeats_robosims_physics_bit_for_bit(control_mode):
    case = Case("robosim", control_mode, 2, "step")
    case.setup()
    ceiling = PhysxCeiling(2, motion="replay")
    try:
        result = case.run_block(0.0, 20, seed=7)
        runner = case._runner
        (state, targets), = runner.recording            # 20 steps: one episode
        assert result.env_steps == 40 and len(targets) == 20
        assert not np.array_equal(targets[0], targets[-1])   # the robot moved
        ceiling.set_states(**state)
        for step_targets in targets:
            ceiling.set_all_targets(step_targets)
            ceiling.timed_control_step()
        env = runner.env
        np.testing.assert_array_equal(ceiling.qpos(), env.robot.view.qpos().numpy())
        np.testing.assert_array_equal(ceiling.cube_poses(), env.task.cube.pose().numpy())
    finally:
        ceiling.close()
        case.close()


def test_a_replay_case_without_a_recorded_block_says_so():
    source = Case("robosim", "pd_joint_delta_pos", 1, "step")
    source.setup()
    replay = Case("ceiling", "pd_joint_delta_pos", 1, "replay", replays=source)
    replay.setup()
    try:
        with pytest.raises(RuntimeError, match="no block to replay"):
            replay.run_block(0.0, 1, seed=0)
        source.run_block(0.0, 3, seed=0)
        assert replay.run_block(0.0, 1, seed=0).env_steps == 3
    finally:
        replay.close()
        source.close()
