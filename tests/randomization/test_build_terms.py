"""Phase "build" terms: a user's own term and the built-in scale and density run through
the one term path, change the descriptions the scene is built from, and draw env i's
values from its own seed only. Checked on real envs against PhysX read-backs."""
from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
import sapien
import torch
from splitmix_reference import reference_mix

import robosim
from robosim.randomization import register_term

CUBE_HALF, CUBE_DENSITY = 0.02, 1000.0     # PickCube-v1's cube (tasks/common.py build_cube)


# -- a user's build-time term, as a user would write it ---------------------------------
@register_term("built_mass", kinds=("object",), modes=("reconfigure",), lower=1e-6, phase="build")
def built_mass(target, event, env_idx, values):
    """Build the object with the drawn mass (kg) instead of one from its density."""
    for i, v in zip(env_idx.tolist(), values.tolist()):
        target.write(i, dataclasses.replace(target.read(i), mass=v[0]))


HEAVY = {"heavy": {"mode": "reconfigure", "target": "object:cube", "property": "built_mass",
                   "dist": {"uniform": [0.1, 0.5]}}}


def _masses(num_envs: int, seed: int, randomization: dict) -> tuple[list[float], list[float]]:
    """(PhysX masses of the cube per env, the logged draws per env) right after make."""
    env = robosim.make("PickCube-v1", num_envs=num_envs, seed=seed, randomization=randomization)
    try:
        cube = env.sim.actors["cube"]
        logged = {e["env"]: e["value"][0] for e in env.randomization.log.of("heavy")}
        return [cube.mass(i)[0] for i in range(num_envs)], [logged.get(i) for i in range(num_envs)]
    finally:
        env.close()


_splitmix = reference_mix   # splitmix64 on Python ints (tests/randomization/splitmix_reference.py)


def _expected_first_build_draw(seed: int, event: str, low: float, high: float) -> float:
    """The uniform draw of `event` at build 0 for base seed `seed`, as docs/design.md and
    rng.py specify the stream key: (seed, EVENT_STREAM, event hash, EVENT_BUILD=1,
    build 0, firing 0, slot 1 (values)), first word, 53 bits."""
    name = int.from_bytes(hashlib.sha256(event.encode()).digest()[:8], "little")
    key = _splitmix(seed, 0x0E7EA75D, name, 1, 0, 0, 1)
    u = (_splitmix(key, 0) >> 11) * 2.0 ** -53
    return float(np.float32(low + (high - low) * u))


def test_a_user_build_time_term_sets_the_built_mass_per_env_from_its_own_seed():
    masses, logged = _masses(4, 10, HEAVY)
    # the built scene has the drawn masses (PhysX stores float32)
    assert masses == pytest.approx(logged, rel=1e-6)
    assert all(0.1 <= m < 0.5 for m in masses) and len(set(masses)) == 4
    # env 2 of a 4-env batch seeded 10 has base seed 12: it is built like a 1-env batch seeded 12
    single, _ = _masses(1, 12, HEAVY)
    assert single[0] == masses[2]
    # and the value is the draw of seed 12's own stream, computed independently here
    assert logged[2] == pytest.approx(_expected_first_build_draw(12, "heavy", 0.1, 0.5), abs=0)
    # without the event the cube weighs what its density gives
    plain, drawn = _masses(1, 12, {})
    assert drawn == [None] and plain[0] == pytest.approx(CUBE_DENSITY * (2 * CUBE_HALF) ** 3, rel=1e-5)


def _box_half_size(view, i: int) -> list[float]:
    body = view.entity_of(i).find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)
    return [float(h) for h in body.get_collision_shapes()[0].half_size]


def test_builtin_scale_and_density_are_build_terms_with_physical_effect():
    env = robosim.make("PickCube-v1", num_envs=3, seed=0, randomization={
        "big": {"mode": "reconfigure", "target": "object:cube", "property": "scale", "dist": 2.0, "envs": [1]},
        "light": {"mode": "reconfigure", "target": "object:cube", "property": "density", "dist": 250.0,
                  "envs": [2]}})
    try:
        cube = env.sim.actors["cube"]
        assert _box_half_size(cube, 0) == pytest.approx([CUBE_HALF] * 3)
        assert _box_half_size(cube, 1) == pytest.approx([2 * CUBE_HALF] * 3)
        assert _box_half_size(cube, 2) == pytest.approx([CUBE_HALF] * 3)
        edge = 2 * CUBE_HALF
        assert cube.mass(0)[0] == pytest.approx(CUBE_DENSITY * edge ** 3, rel=1e-5)
        assert cube.mass(1)[0] == pytest.approx(CUBE_DENSITY * (2 * edge) ** 3, rel=1e-5)
        assert cube.mass(2)[0] == pytest.approx(250.0 * edge ** 3, rel=1e-5)
        # a rebuild draws and applies them again (build 1)
        env.reset(options={"reconfigure": True})
        assert _box_half_size(env.sim.actors["cube"], 1) == pytest.approx([2 * CUBE_HALF] * 3)
        assert [e["env"] for e in env.randomization.log.of("big")] == [1, 1]
    finally:
        env.close()


def test_a_build_term_that_writes_no_description_is_refused_naming_the_event():
    @register_term("broken_build", kinds=("object",), modes=("reconfigure",), phase="build")
    def broken(target, event, env_idx, values):
        for i in env_idx.tolist():
            target.write(i, "a cube")

    with pytest.raises(TypeError, match=r"randomization\['oops'\].*'broken_build'.*RigidObject.*str"):
        robosim.make("PickCube-v1", num_envs=1, randomization={
            "oops": {"mode": "reconfigure", "target": "object:cube", "property": "broken_build", "dist": 1.0}})


def test_a_build_event_on_an_object_nothing_builds_is_refused():
    with pytest.raises(ValueError, match=r"randomization\['big'\]\['target'\] names object 'ghost'"):
        robosim.make("PickCube-v1", num_envs=1, randomization={
            "big": {"mode": "reconfigure", "target": "object:ghost", "property": "scale", "dist": 2.0}})


def test_phase_declarations_are_checked():
    with pytest.raises(ValueError, match="phase must be one of"):
        register_term("x", kinds=("object",), phase="whenever")
    with pytest.raises(ValueError, match="phase 'build'.*modes"):
        register_term("x", kinds=("object",), modes=("reset",), phase="build")
    with pytest.raises(ValueError, match="phase 'build'.*kinds"):
        register_term("x", kinds=("robot",), modes=("reconfigure",), phase="build")


# -- a user's "before_init" term: runs before the task places its objects ------------------
@register_term("lift_before_init", kinds=("object",), modes=("reset",), dim=3, operation="add",
               phase="before_init")
def lift_before_init(target, event, env_idx, values):
    """Move the object by the draws; the task's initialize_episode then places it anew."""
    pose = target.view.pose()[env_idx]
    pose[:, :3] += values.to(pose.device)
    target.view.set_pose(pose, env_idx)


def test_phase_decides_whether_the_task_overrides_a_reset_term():
    def cube_z(prop: str) -> torch.Tensor:
        env = robosim.make("PickCube-v1", num_envs=2, randomization={
            "up": {"mode": "reset", "target": "object:cube", "property": prop, "dist": [0.0, 0.0, 0.5]}})
        try:
            env.reset(seed=5)
            assert [e["env"] for e in env.randomization.log.of("up")][-2:] == [0, 1]   # the term ran
            return env.sim.actors["cube"].pose()[:, 2].clone()
        finally:
            env.close()

    before, after = cube_z("lift_before_init"), cube_z("position")    # "position": phase after_init
    assert before == pytest.approx([CUBE_HALF] * 2, abs=1e-4)          # the task put the cube on the ground
    assert after == pytest.approx([CUBE_HALF + 0.5] * 2, abs=1e-4)     # the term moved it after the task
