"""The replay ceiling is robosim's own run in bare PhysX: stepped in lockstep with a
robosim benchmark env, fed the drive targets robosim's controller set, the plain-SAPIEN
scene of robosim.bench.ceiling ends in the same joint positions and cube poses, bit for
bit. If PickCube's scene or physics settings drift from the ceiling's, the ratio to the
ceiling stops meaning "robosim's overhead" and this test fails. The bare build those
scenes come from (also the build-time reference) holds PickCube's bodies and no render
component."""
import numpy as np
import pytest
import sapien

import robosim
from robosim.bench.cases import Case
from robosim.bench.ceiling import bare_build_seconds, build_bare_scenes


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


def test_the_bare_build_reference_holds_pickcubes_bodies_and_no_render_component():
    built = build_bare_scenes(3)
    env = robosim.make("PickCube-v1", num_envs=3)
    try:
        entities = [e for scene in built.scenes for e in scene.entities]
        assert not [e.name for e in entities if e.find_component_by_type(sapien.render.RenderBodyComponent)]
        system = built.system
        assert all(scene.physx_system is system for scene in built.scenes)
        links = system.get_articulation_link_components()
        reference = [link for robot in env.robot.view.articulations for link in robot.get_links()]
        assert len(links) == len(reference) == 3 * len(built.robots[0].get_links())
        assert sorted(link.name for link in links) == sorted(link.name for link in reference)
        assert sorted(round(link.mass, 6) for link in links) == sorted(round(link.mass, 6) for link in reference)
        cube_mass = round(env.task.cube.bodies[0].mass, 6)
        assert [round(c.find_component_by_type(sapien.physx.PhysxRigidDynamicComponent).mass, 6)
                for c in built.cubes] == [cube_mass] * 3
        assert bare_build_seconds(2) > 0
    finally:
        for scene in built.scenes:
            scene.clear()
        env.close()
