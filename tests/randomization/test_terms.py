"""Randomization terms: a user term through `randomization=`, the new built-in terms
(observation noise, action noise, external force, joint friction) checked by their
effect on real physics or against values read back from PhysX, bad declarations."""
from __future__ import annotations

import pytest
import torch

import robosim
from robosim.randomization import register_term


# -- a user-defined term, as a user would write it (under 15 lines) ----------------------
@register_term("qpos_noise", kinds=("observation",), modes=("step",), dim=None, operation="add")
def qpos_noise(target, event, env_idx, values):
    """Add the drawn values to the observed joint positions."""
    target.write(env_idx, target.read(env_idx) + values)


USER_NOISE = {"noise": {"mode": "step", "target": "observation:agent/qpos", "property": "qpos_noise",
                        "dist": {"normal": [0.0, 0.01]}}}


def _qpos_noise_run(num_envs: int, randomization: dict | None, steps: int = 4) -> list[torch.Tensor]:
    env = robosim.make("PickCube-v1", num_envs=num_envs, obs_mode="state_dict", randomization=randomization)
    try:
        obs, _ = env.reset(seed=7)
        out = [obs["agent"]["qpos"].clone() - env.robot.view.qpos()]
        for _ in range(steps):
            obs, *_ = env.step(torch.zeros(num_envs, env.single_action_space.shape[0]))
            out.append(obs["agent"]["qpos"] - env.robot.view.qpos())
    finally:
        env.close()
    return out


def test_a_user_observation_noise_term_works_through_randomization():
    noisy = _qpos_noise_run(3, USER_NOISE)
    clean = _qpos_noise_run(3, None)
    assert all(torch.equal(c, torch.zeros_like(c)) for c in clean)   # the observation is the true qpos
    noise = torch.stack(noisy)                                         # (steps + 1, 3, dof)
    assert (noise != 0).float().mean() > 0.99
    assert 0.005 < float(noise.std()) < 0.02                           # std 0.01 drawn
    assert not torch.equal(noise[0], noise[1])                         # fresh noise every step
    assert not torch.equal(noise[:, 0], noise[:, 1])                   # and per env
    # env i's noise depends only on its own seed: env 1 of a 3-env batch (seed 8) equals
    # env 0 of a 1-env batch seeded 8
    single = robosim.make("PickCube-v1", num_envs=1, obs_mode="state_dict", randomization=USER_NOISE)
    try:
        obs, _ = single.reset(seed=8)
        assert torch.equal(obs["agent"]["qpos"] - single.robot.view.qpos(), noise[0, 1:2])
    finally:
        single.close()


def test_action_noise_changes_what_the_controller_gets_reproducibly():
    spec = {"shake": {"mode": "step", "target": "action", "property": "action_noise",
                      "dist": {"uniform": [-0.5, 0.5]}}}

    def run(randomization):
        env = robosim.make("PickCube-v1", num_envs=2, control_mode="pd_joint_delta_pos", randomization=randomization)
        try:
            env.reset(seed=3)
            for _ in range(3):
                env.step(torch.zeros(2, env.single_action_space.shape[0]))
            return env.robot.view.drive_targets().clone()
        finally:
            env.close()

    clean, noisy, again = run(None), run(spec), run(spec)
    assert not torch.allclose(clean, noisy)
    assert torch.equal(noisy, again)


def test_external_force_lifts_a_cube_as_newton_says():
    """An upward held force of 2 m g gives the cube a net upward acceleration g."""
    probe = robosim.make("PickCube-v1", num_envs=1)
    mass = probe.sim.actors["cube"].mass(0)[0]
    probe.close()
    env = robosim.make("PickCube-v1", num_envs=2, randomization={
        "lift": {"mode": "reset", "target": "object:cube", "property": "external_force", "envs": [1],
                 "dist": [0.0, 0.0, 2 * mass * 9.81, 0.0, 0.0, 0.0]}})
    try:
        env.reset(seed=0)
        cube = env.sim.actors["cube"]
        z0 = cube.pose()[:, 2].clone()
        steps = 2                                                   # 0.1 s at 20 Hz control (then
        # the rising cube would reach the gripper above it)
        for _ in range(steps):
            env.step(None)
        rise = cube.pose()[:, 2] - z0
        t = steps / env.task.control_freq
        assert abs(float(rise[0])) < 1e-3                           # env 0 has no force
        assert float(rise[1]) == pytest.approx(0.5 * 9.81 * t * t, rel=0.1)
        env.sim.wrenches.clear(torch.tensor([1]))
        assert torch.equal(env.sim.wrenches.get(cube), torch.zeros(2, 6))
    finally:
        env.close()


def test_joint_friction_term_reaches_physx():
    env = robosim.make("PickCube-v1", num_envs=2, randomization={
        "jf": {"mode": "reset", "target": "robot", "property": "joint_friction", "dist": {"uniform": [0.1, 0.3]}}})
    try:
        env.reset(seed=1)
        logged = {e["env"]: e["value"][0] for e in env.randomization.log.of("jf")[-2:]}
        for i in (0, 1):
            read = env.robot.view.joint_frictions(i)               # read back from PhysX's joints
            assert read == pytest.approx([logged[i]] * len(read), rel=1e-6)
        assert logged[0] != logged[1]
    finally:
        env.close()


@pytest.mark.parametrize("spec, message", [
    ({"mode": "step", "target": "observation:agent/nope", "property": "observation_noise",
      "dist": {"normal": [0, 0.1]}}, "no float leaf"),
    ({"mode": "reset", "target": "observation", "property": "observation_noise",
      "dist": {"normal": [0, 0.1]}}, "cannot change in mode 'reset'"),
    ({"mode": "step", "target": "action", "property": "action_noise",
      "dist": {"uniform": [[0, 0], [1, 1]]}}, "must give 1 or"),
    ({"mode": "step", "target": "object:cube", "property": "observation_noise",
      "dist": 0.1}, "must be one of"),
    # 1e39 is inf in float32: these gave infinite masses and gains
    ({"mode": "reset", "target": "object:cube", "property": "mass", "dist": {"uniform": [0.1, 1e39]}},
     r"randomization\['bad'\]\['dist'\] uniform must be numbers within \+-1e\+09, got 1e\+39"),
    ({"mode": "reset", "target": "robot", "property": "stiffness", "dist": {"uniform": [0.5, 1e39]}},
     r"randomization\['bad'\]\['dist'\] uniform must be numbers within \+-1e\+09, got 1e\+39"),
    ({"mode": "reset", "target": "object:cube", "property": "mass", "dist": {"choice": [0.1, -2e9]}},
     r"randomization\['bad'\]\['dist'\] choice must be numbers within \+-1e\+09, got -2000000000.0"),
])
def test_bad_term_declarations_name_the_event(spec, message):
    with pytest.raises(ValueError, match=message):
        robosim.make("PickCube-v1", num_envs=1, obs_mode="state_dict", randomization={"bad": spec})


def test_register_term_refuses_bad_declarations():
    with pytest.raises(ValueError, match="kinds must be"):
        register_term("x", kinds=("planet",))
    with pytest.raises(ValueError, match="modes must be"):
        register_term("x", kinds=("object",), modes=("sometimes",))
    with pytest.raises(ValueError, match="dim must be"):
        register_term("x", kinds=("object",), dim=0)


def test_restore_brings_back_the_held_wrench():
    """An interval push held when save_state ran is held again after restore_state, so the
    continuation repeats bit for bit (separate isolation)."""
    env = robosim.make("PickCube-v1", num_envs=2, physics_isolation="separate", randomization={
        "shove": {"mode": "interval", "target": "object:cube", "property": "external_force",
                  "dist": {"uniform": [[-0.3, -0.3, 0, 0, 0, 0], [0.3, 0.3, 0, 0, 0, 0]]},
                  "period_s": {"uniform": [0.1, 0.2]}}})
    try:
        env.reset(seed=4)
        for _ in range(6):                            # periods are 2-4 control steps
            env.step(None)
        cube = env.sim.actors["cube"]
        held = env.sim.wrenches.get(cube)
        assert (held != 0).any()                      # a push fired and is held
        sid = env.save_state()
        runs = []
        for _ in range(2):
            env.restore_state(sid)
            assert torch.equal(env.sim.wrenches.get(cube), held)
            for _ in range(4):
                env.step(None)
            runs.append(env.get_state().clone())
        assert torch.equal(runs[0], runs[1])
    finally:
        env.close()
