"""Property-based bad-input tests (hypothesis, fixed derandomized profile: bounded CI time).

For any generated input: either it is valid and accepted, or a ValueError/TypeError
names the argument, and the env's state is unchanged and the env still steps."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robosim
from robosim.envs import checks
from robosim.sensors.camera import HumanViewConfig
from robosim.sim import PhysicsConfig
from robosim.vector.normalize import RunningMeanStd

settings.register_profile("robosim-ci", max_examples=40, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("robosim-ci")

N = 2
numbers = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.booleans(), st.text(max_size=3), st.none())


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=N)
    env.reset(seed=0)
    yield env
    env.close()


def _refused_or_ok(env, call, names: tuple[str, ...]) -> bool:
    """Run call(); on a refusal check the message names an argument and the env is
    unchanged. Returns True when the input was accepted."""
    before = env.get_state()
    try:
        call()
    except (ValueError, TypeError) as err:
        assert any(name in str(err) for name in names), str(err)
        assert torch.equal(env.get_state(), before)
        return False
    return True


@pytest.mark.slow   # many generated examples: ~19 s
@given(st.one_of(
    st.lists(st.lists(numbers, min_size=0, max_size=8), min_size=0, max_size=3),
    st.builds(lambda shape, fill: np.full(shape, fill, np.float32),
              st.tuples(st.integers(0, 3), st.integers(0, 9)), st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(lambda fill, dtype: torch.full((N, 7), fill).to(dtype),
              st.floats(-1e30, 1e30), st.sampled_from([torch.float64, torch.float16, torch.int32, torch.bool])),
))
def test_actions(env, action):
    if _refused_or_ok(env, lambda: env.step(action), ("action",)):
        assert torch.isfinite(env.get_state()).all()


@given(st.one_of(numbers, st.lists(numbers, max_size=4), st.tuples(numbers, numbers)))
def test_seeds(env, seed):
    _refused_or_ok(env, lambda: env.reset(seed=seed), ("seed",))
    env.step(torch.zeros(N, 7))


@given(st.one_of(numbers, st.lists(numbers, max_size=4),
                 st.builds(torch.tensor, st.lists(st.integers(-3, 5), max_size=4)),
                 st.builds(lambda v: np.array(v, np.float64), st.lists(st.floats(-2, 3), max_size=3))))
def test_env_idx(env, env_idx):
    _refused_or_ok(env, lambda: env.reset(options={"env_idx": env_idx}), ("env_idx",))


@given(st.dictionaries(st.sampled_from(["env_idx", "reconfigure", "seed", "mask", ""]), numbers, max_size=3))
def test_options(env, options):
    _refused_or_ok(env, lambda: env.reset(options=options), ("options",))


@given(st.builds(lambda noise, scale, rows: (rows, noise, scale), st.integers(0, 2**31),
                 st.sampled_from([0.0, 1e-3, 1.0, 1e3, 1e30, math.nan]), st.sampled_from([[0], [1], [0, 1]])))
def test_states(env, case):
    rows, seed, scale = case
    base = env.get_state()[rows]
    noise = torch.randn(base.shape, generator=torch.Generator().manual_seed(seed)) * scale
    if _refused_or_ok(env, lambda: env.set_state(base + noise, env_idx=rows), ("state",)):
        env.step(torch.zeros(N, 7))
        assert torch.isfinite(env.get_state()).all()


@given(st.one_of(numbers, st.lists(st.booleans(), max_size=4),
                 st.builds(lambda v: np.array(v), st.lists(st.integers(0, 1), max_size=3))))
def test_masks(mask):
    try:
        out = checks.to_bool_mask("reset_mask", mask, N)
    except (ValueError, TypeError) as err:
        assert "reset_mask" in str(err)
    else:
        assert out.dtype == torch.bool and out.shape == (N,)


stat_tensors = st.one_of(st.builds(lambda v: torch.tensor(v, dtype=torch.float64),
                                   st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=3, max_size=3)),
                         st.builds(torch.zeros, st.integers(0, 4)), numbers)


@given(st.fixed_dictionaries({"mean": stat_tensors, "var": stat_tensors, "count": numbers}))
def test_normalize_statistics(state):
    rms = RunningMeanStd((3,))
    before = rms.state_dict()
    try:
        rms.load_state_dict(state)
    except (ValueError, TypeError) as err:
        assert "state" in str(err)
        assert torch.equal(rms.mean, before["mean"]) and torch.equal(rms.var, before["var"])
    else:
        assert torch.isfinite(rms.mean).all() and (rms.var >= 0).all() and rms.count >= 0


@given(st.dictionaries(st.sampled_from(["width", "height", "fovy", "distance", "yaw", "target_position", "zoom"]),
                       st.one_of(numbers, st.lists(numbers, max_size=4)), max_size=3))
def test_camera_configs(config):
    try:
        view = HumanViewConfig.from_user(config)
    except (ValueError, TypeError) as err:
        assert "render_camera" in str(err) or "render_size" in str(err), str(err)
    else:
        assert 0 < view.fovy < math.pi and view.width > 0 and view.height > 0


@given(st.dictionaries(st.sampled_from(["solver_position_iterations", "cpu_workers", "static_friction",
                                        "restitution", "contact_offset", "rest_offset", "sleep_threshold"]),
                       numbers, max_size=3))
def test_physics_configs(kwargs):
    try:
        config = PhysicsConfig(**kwargs)
    except (ValueError, TypeError) as err:
        assert any(name in str(err) for name in kwargs) or "rest_offset" in str(err), str(err)
    else:
        assert 0 <= config.workers(64) <= 64 and config.static_friction >= 0
