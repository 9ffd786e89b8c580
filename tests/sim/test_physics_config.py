"""PhysicsConfig: ManiSkill3's solver settings by default, applied to what is built."""
from __future__ import annotations

import pytest

import robosim
from robosim.sim import PhysicsConfig


def test_defaults_match_maniskill3_scene_config():
    from mani_skill.utils.structs.types import DefaultMaterialsConfig, SceneConfig

    ours, theirs, materials = PhysicsConfig(), SceneConfig(), DefaultMaterialsConfig()
    for name in ("solver_position_iterations", "solver_velocity_iterations", "sleep_threshold",
                 "contact_offset", "rest_offset", "bounce_threshold"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name)), name
    assert (ours.static_friction, ours.dynamic_friction, ours.restitution) == pytest.approx(
        (materials.static_friction, materials.dynamic_friction, materials.restitution))


def test_settings_reach_the_built_bodies():
    env = robosim.make("PickCube-v1", num_envs=1, physics=PhysicsConfig(solver_position_iterations=21))
    try:
        robot = env.robot.view.articulations[0]
        assert robot.get_solver_position_iterations() == 21
        cube = env.task.cube.bodies[0]
        assert cube.get_solver_position_iterations() == 21
        assert cube.get_collision_shapes()[0].get_contact_offset() == pytest.approx(0.02)
    finally:
        env.close()


@pytest.mark.parametrize("kwargs,message", [
    ({"solver_position_iterations": 0}, r"solver_position_iterations must be an int in \[1, 255\], got 0"),
    ({"cpu_workers": -1}, r"cpu_workers must be an int >= 0 or None, got -1"),
    ({"contact_offset": 0.01, "rest_offset": 0.02}, r"need 0 <= rest_offset < contact_offset"),
])
def test_bad_physics_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PhysicsConfig(**kwargs)


def test_env_rejects_a_non_config():
    with pytest.raises(TypeError, match=r"physics must be a robosim.sim.PhysicsConfig or None, got dict"):
        robosim.make("Reach-v1", physics={"solver_position_iterations": 4})


def test_worker_threads_only_for_large_batches():
    config = PhysicsConfig()
    assert config.workers(1) == 0 and config.workers(16) == 0  # threads cost more than they save
    assert config.workers(64) >= 1
    assert PhysicsConfig(cpu_workers=3).workers(1) == 3
