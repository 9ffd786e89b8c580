"""Per-env faults: absurd states are refused, physics faults are flagged and contained.

With physics_isolation="separate" the envs that were not touched stay bit-for-bit an
unfaulted run while a random subset gets NaN velocities, huge impulses and teleports
into other objects through SAPIEN directly, absurd set_state calls and clip-bound
actions."""
from __future__ import annotations

import math

import pytest
import torch

import robosim
from robosim.envs.faults import FAULT_NAMES, NON_FINITE

N, STEPS, SEED = 5, 24, 3
FAULTED = [1, 3, 4]
CLEAN = [0, 2]


def _actions(env, steps: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
    return low + torch.rand(steps, env.num_envs, len(low), generator=g) * (high - low)


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=N, control_mode="pd_joint_pos", physics_isolation="separate")
    yield env
    env.close()


def _cube(env, i):
    return env.sim.actors["cube"].bodies[i]


def _inject(env, t: int) -> None:
    """Faults through SAPIEN itself (bypassing every check), and through the public API."""
    if t == 4:
        _cube(env, 1).set_linear_velocity([math.nan] * 3)
    if t == 8:
        _cube(env, 3).set_linear_velocity([1e4, 0.0, 0.0])                  # a huge impulse
    if t == 12:
        robot_base = env.sim.articulations[next(iter(env.sim.articulations))].articulations[4].root_pose.p
        env.sim.actors["cube"].entities[4].set_pose(
            type(env.sim.actors["cube"].entities[4].pose)(robot_base + [0, 0, 0.1]))   # inside the robot
    if t == 16:
        state = env.get_state()
        for bad in (state[3:4].clone().fill_(math.nan), state[3:4] * 0, state[3:4] + 1e30):
            with pytest.raises(ValueError, match="state"):
                env.set_state(bad, env_idx=[3])
    env.sim.read_cache.invalidate()


def _run(env, actions, inject=None):
    env.reset(seed=SEED)
    states, faults, fails = [env.get_state()], [], []
    for t in range(len(actions)):
        if inject is not None:
            inject(env, t)
        _, _, terminated, _, info = env.step(actions[t])
        states.append(env.get_state())
        faults.append(info["sim_fault"].clone())
        fails.append(info["fail"].clone())
    return torch.stack(states), torch.stack(faults), torch.stack(fails)


def test_faults_in_some_envs_leave_the_others_bit_identical(env):
    actions = _actions(env, STEPS, 0)
    # clip-bound actions, drawn from a seeded generator: an unseeded draw sometimes swung the
    # arm hard enough to knock the cube out of its cell in the unfaulted reference run
    bang = torch.rand(STEPS, len(FAULTED), actions.shape[2], generator=torch.Generator().manual_seed(1)) < 0.5
    actions[:, FAULTED] = torch.where(bang, env._action_low, env._action_high)
    reference, ref_faults, _ = _run(env, actions)
    assert not ref_faults.any()
    faulted, faults, fails = _run(env, actions, _inject)
    assert torch.equal(faulted[:, CLEAN], reference[:, CLEAN])
    assert int(faults[4, 1]) == NON_FINITE and bool(fails[4, 1])
    assert FAULT_NAMES[int(faults[8, 3])] in ("runaway velocity", "body outside its cell") and bool(fails[8, 3])
    assert not faults[:, CLEAN].any()
    assert torch.isfinite(faulted).all()                    # faulted envs got a valid state back
    env.reset(seed=9, options={"env_idx": torch.tensor(FAULTED)})
    _, _, _, _, info = env.step(actions[0])
    assert not info["sim_fault"].any() and torch.isfinite(env.get_state()).all()


@pytest.mark.parametrize("column, value, message", [
    ("qpos", 1e30, "joint position 0 must be within its limits"),
    ("quat", 0.0, "must hold a unit quaternion"),
    ("quat", 7.0, "must hold a unit quaternion"),
    ("pos", 40.0, "body outside its cell"),
    ("vel", 1e6, "runaway velocity"),
])
def test_absurd_states_are_refused_before_anything_is_written(env, column, value, message):
    env.reset(seed=0)
    before = env.get_state()
    layout = env._faults.layout
    cols = {"qpos": layout.qpos[:1], "quat": layout.quat[1], "pos": layout.pos[1, :1], "vel": layout.lin[0]}[column]
    bad = before[2:3].clone()
    bad[0, cols] = value
    with pytest.raises(ValueError, match=message):
        env.set_state(bad, env_idx=[2])
    assert torch.equal(env.get_state(), before)
    env.step(torch.zeros(N, env.single_action_space.shape[0]))   # still usable


def test_a_task_hook_that_writes_an_absurd_state_is_named(env):
    task = env.task
    original = task.initialize_episode

    def broken(env_idx, rng):
        original(env_idx, rng)
        cube = env.sim.actors["cube"]
        cube.set_pose(torch.tensor([[0.0, 0.0, 100.0, 1.0, 0.0, 0.0, 0.0]] * len(env_idx)), env_idx)

    task.initialize_episode = broken
    try:
        with pytest.raises(RuntimeError, match=r"initialize_episode wrote an invalid state for envs \[1\]: "
                                               r"body outside its cell"):
            env.reset(seed=0, options={"env_idx": torch.tensor([1])})
    finally:
        task.initialize_episode = original
    env.reset(seed=0)
    assert torch.isfinite(env.get_state()).all()


def test_a_restored_state_that_faults_again_restarts_from_rest(env):
    """A cube 10 cm inside its cell's +x edge, moving outward at 40 m/s (within every
    set_state check): each step carries it out of the cell. The first fault restores the
    written state, which faults again; the second restores it with every velocity zero,
    so the env moves on instead of repeating the fault until a reset (it did before)."""
    from robosim.envs.faults import CELL_HALF, OUTSIDE_CELL

    env.reset(seed=SEED)
    layout = env._faults.layout
    x = layout.pos[layout.names.index("cube"), 0]       # the cube's x column
    vx = x + 7                                            # after its pose: linear velocity x
    assert vx in layout.lin[:, 0]
    state = env.get_state().clone()
    state[2, x], state[2, vx] = CELL_HALF - 0.1, 40.0
    env.set_state(state)
    codes = []
    for action in _actions(env, 4, SEED):   # the arm cannot reach the cube out there
        *_, info = env.step(action)
        codes.append(int(info["sim_fault"][2]))
    assert codes[:2] == [OUTSIDE_CELL, OUTSIDE_CELL] and codes[2:] == [0, 0], codes
    assert abs(float(env.get_state()[2, vx])) < 40.0
