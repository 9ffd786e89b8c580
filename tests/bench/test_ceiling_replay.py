"""The replay ceiling is robosim's own run in bare PhysX: stepped in lockstep with a
robosim benchmark env, fed the drive targets robosim's controller set, the plain-SAPIEN
scene of robosim.bench.ceiling ends in the same joint positions and cube poses, bit for
bit. If PickCube's scene or physics settings drift from the ceiling's, the ratio to the
ceiling stops meaning "robosim's overhead" and this test fails. The bare-build reference
of the build times holds the same bodies with no render component."""
import numpy as np
import pytest
import sapien

from robosim.bench.cases import Case
from robosim.bench.ceiling import PhysxCeiling, bare_build_seconds, build_bare_scenes


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


def test_the_bare_build_reference_holds_the_same_bodies_and_no_render_component():
    scenes = build_bare_scenes(3)
    ceiling = PhysxCeiling(3, motion="hold")
    try:
        entities = [e for scene in scenes for e in scene.entities]
        assert not [e.name for e in entities if e.find_component_by_type(sapien.render.RenderBodyComponent)]
        system = scenes[0].physx_system
        assert all(scene.physx_system is system for scene in scenes)
        links = system.get_articulation_link_components()
        reference = ceiling.system.get_articulation_link_components()
        assert len(links) == len(reference) == 3 * len(ceiling.robots[0].get_links())
        assert sorted(link.name for link in links) == sorted(link.name for link in reference)
        assert [round(c.mass, 6) for c in system.get_rigid_dynamic_components()] == \
            [round(c.mass, 6) for c in ceiling.system.get_rigid_dynamic_components()]
        assert bare_build_seconds(2) > 0
    finally:
        for scene in scenes:
            scene.clear()
        ceiling.close()
