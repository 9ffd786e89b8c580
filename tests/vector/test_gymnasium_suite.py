"""gymnasium 1.4's own vector tests (tests/vector, tests/wrappers/vector), ported to
robosim's two vector envs: the batched torch env (`batched`: PushCube seen through
TorchToNumpy, numpy like gymnasium's) and the list adapter (`listed`: make_list_vec over
CartPole). Each test names the gymnasium test it ports; docs/vector.md lists the ones
that do not apply and why."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import Box, Dict, Discrete, MultiBinary, MultiDiscrete, Tuple
from gymnasium.vector import AutoresetMode, VectorWrapper

from robosim.vector import BatchedVectorEnv, TorchToNumpy, make_list_vec

from .conftest import rendering_push_cube

N, HORIZON = 3, 10


def cartpole(seed: int | None = None, **kwargs: Any):
    """gymnasium's testing_utils.make_env: an env whose action space and reset are seeded."""
    def make():
        env = gym.make("CartPole-v1", disable_env_checker=True, **kwargs)
        if seed is not None:
            env.action_space.seed(seed)
            env.reset(seed=seed)
        return env
    return make


@pytest.fixture(scope="module")
def push_cube():
    env = rendering_push_cube(N, HORIZON)
    yield env
    env.close()


@pytest.fixture(params=["batched", "listed"])
def make(request, push_cube):
    """make(mode) -> a numpy vector env of N envs in that autoreset mode, on either side."""
    made = []

    def build(mode: AutoresetMode = AutoresetMode.NEXT_STEP, **kwargs: Any):
        if request.param == "batched":
            venv = TorchToNumpy(BatchedVectorEnv(push_cube, mode))
        else:
            venv = TorchToNumpy(make_list_vec([cartpole(i, **kwargs) for i in range(N)], mode))
            made.append(venv)
        return venv
    build.kind = request.param
    yield build
    for venv in made:
        venv.close()


def sample(venv, seed: int) -> np.ndarray:
    space = venv.action_space
    space.seed(seed)
    return space.sample()


# -- tests/vector/test_vector_env.py ------------------------------------------------------
def test_random_seeding_basics(make):
    venv = make()
    venv.reset(seed=42)
    assert venv.np_random_seed == (42, 43, 44)
    venv.reset(seed=None)              # an unseeded reset keeps the seeds
    assert venv.np_random_seed == (42, 43, 44)


def test_random_seeds_set_at_retrieval(make):
    venv = make()
    seeds = venv.np_random_seed
    assert len(set(seeds)) == N and all(isinstance(s, int) for s in seeds)
    if make.kind == "listed":          # make_env seeded env i with i
        assert seeds == (0, 1, 2)


def test_partial_reset(make):
    venv = make(AutoresetMode.DISABLED)
    reset_obs, _ = venv.reset(seed=[0, 1, 2])
    for t in range(3):
        step_obs, _, terminated, truncated, _ = venv.step(sample(venv, 123 + t))
    assert not (terminated | truncated).any()
    masked_obs, _ = venv.reset(seed=[0, 1, 0], options={"reset_mask": np.array([True, True, False])})
    assert np.array_equal(masked_obs[:2], reset_obs[:2])
    assert np.array_equal(masked_obs[2], step_obs[2])


@pytest.mark.parametrize("mask, error, match", [
    (np.array([True]), ValueError, r"must have shape \(3,\), got \(1,\)"),
    (np.array([True, True, False, False]), ValueError, r"must have shape \(3,\), got \(4,\)"),
    (np.array([[True, True, True]]), ValueError, r"must have shape \(3,\), got \(1, 3\)"),
    (np.array([False, False, False]), ValueError, "must contain at least one True value"),
    (np.array([1, 1, 0]), ValueError, "must have dtype bool, got torch.int64"),
    (np.array([1.0, 1.0, 0.0]), ValueError, "must have dtype bool, got torch.float64"),
])
def test_partial_reset_failure(make, mask, error, match):
    venv = make(AutoresetMode.DISABLED)
    venv.reset(options={"reset_mask": np.array([True, True, True])})
    with pytest.raises(error, match=r"options\['reset_mask'\] " + match):
        venv.reset(options={"reset_mask": mask})


def test_action_count_compatibility(make):
    venv = make(AutoresetMode.DISABLED)
    venv.reset(seed=0)
    actions = sample(venv, 0)
    obs, reward, terminated, truncated, _ = venv.step(actions)
    assert len(obs) == len(reward) == len(terminated) == len(truncated) == N
    with pytest.raises(ValueError):
        venv.step(actions[: N - 1])
    with pytest.raises(ValueError):
        venv.step(np.concatenate([actions, actions[:1]]))


class Counter(gym.Env):
    """gymnasium's GenericTestEnv as its vector tests set it up: a count from reset
    (the seed, else 0) up to `max_count`, where the episode terminates; its rgb_array
    frame is filled with the count (CartPole's renderer needs pygame)."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, space: gym.Space | None = None, max_count: int = 3, render_mode: str | None = None):
        self.observation_space = Discrete(4) if space is None else space
        self.action_space, self.max_count = Discrete(5), max_count
        self.render_mode = render_mode

    def render(self):
        return np.full((4, 4, 3), self.count, dtype=np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = seed if seed is not None else 0
        self.observation_space.seed(self.count)
        return self.observation_space.sample(), {"reset": True}

    def step(self, action):
        self.count += 1
        done = self.count == self.max_count
        return self.observation_space.sample(), float(action), done, False, {"action": int(action)}


def test_final_obs_info():
    """NEXT_STEP: the ending step reports the step's info; the next step is the reset's."""
    venv = TorchToNumpy(make_list_vec([lambda: Counter(max_count=3)]))
    obs, info = venv.reset(seed=0)
    assert info["reset"].tolist() == [True] and info["_reset"].tolist() == [True]
    for action in (1, 2):
        obs, _, terminated, _, info = venv.step([action])
        assert terminated.tolist() == [False] and info["action"].tolist() == [action]
    obs, _, terminated, _, info = venv.step([3])
    assert terminated.tolist() == [True] and info["action"].tolist() == [3]
    obs, reward, terminated, _, info = venv.step([4])          # the reset step
    assert terminated.tolist() == [False] and reward.tolist() == [0.0]
    assert info["reset"].tolist() == [True] and info["_reset"].tolist() == [True]


@pytest.mark.parametrize("space", [Box(-1, 1, (2,)), Discrete(5), MultiDiscrete([2, 3]), MultiBinary(3),
                                   Dict({"a": Box(0, 1, (2,)), "b": Discrete(3)}),
                                   Tuple((Discrete(2), Box(0, 1, (1,))))],
                         ids=["Box", "Discrete", "MultiDiscrete", "MultiBinary", "Dict", "Tuple"])
def test_vector_obs_action_spaces(space):
    venv = TorchToNumpy(make_list_vec([lambda: Counter(space) for _ in range(N)]))
    obs, _ = venv.reset(seed=0)
    assert obs in venv.observation_space
    obs, *_ = venv.step(sample(venv, 0))
    assert obs in venv.observation_space


# -- tests/vector/test_sync_vector_env.py ---------------------------------------------------
def test_metadata_sync_vector_env(make):
    venv = make(AutoresetMode.SAME_STEP)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    inner = venv.unwrapped.env
    assert "autoreset_mode" not in (inner.envs[0].metadata if make.kind == "listed" else inner.metadata)


def test_reset_and_step_sync_vector_env(make):
    venv = make()
    obs, _ = venv.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.dtype == venv.observation_space.dtype
    assert obs.shape == (N, *venv.single_observation_space.shape) == venv.observation_space.shape
    for actions in (sample(venv, 1), [venv.single_action_space.sample() for _ in range(N)]):
        obs, reward, terminated, truncated, _ = venv.step(actions)
        assert obs.shape == venv.observation_space.shape and obs.dtype == venv.observation_space.dtype
        assert reward.shape == (N,) and np.issubdtype(reward.dtype, np.floating)
        assert terminated.dtype == truncated.dtype == np.bool_ and terminated.shape == truncated.shape == (N,)


@pytest.mark.slow   # renders frames of every env: ~27 s
def test_render_and_call_sync_vector_env(make):
    venv = make()
    if make.kind == "listed":
        venv = TorchToNumpy(make_list_vec([lambda: Counter(render_mode="rgb_array") for _ in range(N)]))
        venv.set_attr("gravity", 9.8)
    venv.reset(seed=0)
    frames = venv.render()
    assert isinstance(frames, tuple) and len(frames) == N and all(isinstance(f, np.ndarray) for f in frames)
    images = venv.call("render")
    assert isinstance(images, tuple) and len(images) == N
    assert all(np.array_equal(image, frame) for image, frame in zip(images, frames))
    name = "gravity" if make.kind == "listed" else "max_episode_steps"
    assert venv.call(name) == venv.get_attr(name) and len(venv.call(name)) == N


def test_set_attr_sync_vector_env():
    venv = TorchToNumpy(make_list_vec([cartpole(i) for i in range(4)]))
    venv.set_attr("gravity", [9.81, 3.72, 8.87, 1.62])
    assert venv.get_attr("gravity") == (9.81, 3.72, 8.87, 1.62)


def test_check_spaces_sync_vector_env():
    with pytest.raises(ValueError, match=r"envs\[1\].observation_space must equal envs\[0\].observation_space"):
        make_list_vec([cartpole(0), lambda: gym.make("FrozenLake-v1")])


def pendulum():
    env = gym.make("Pendulum-v1", disable_env_checker=True)   # a Box action space, like BipedalWalker's
    env.action_space.seed(123)
    env.reset(seed=123)
    return env


def test_sync_vector_env_seed():
    """The batched action space starts from the single env's seeded generator."""
    single = pendulum()
    venv = make_list_vec([pendulum])
    for _ in range(20):
        assert np.array_equal(single.action_space.sample()[None], venv.action_space.sample())


# -- tests/vector/test_autoreset_mode.py ----------------------------------------------------
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_autoreset_metadata(make, mode):
    assert make(mode).metadata["autoreset_mode"] == mode
    assert make(mode.value).metadata["autoreset_mode"] == mode


@pytest.mark.parametrize("space", [Box(-1, 1, (2,)), Discrete(5), Dict({"a": Box(0, 1, (2,)), "b": Discrete(3)})],
                         ids=["Box", "Discrete", "Dict"])
def test_same_step_final_obs(space):
    venv = TorchToNumpy(make_list_vec([lambda: Counter(space) for _ in range(3)], AutoresetMode.SAME_STEP))
    venv.set_attr("max_count", [2, 3, 3])
    venv.reset()
    venv.step([1, 2, 3])
    _, _, terminated, _, info = venv.step([1, 2, 3])
    assert terminated.tolist() == [True, False, False] and info["final_obs"][0] in venv.single_observation_space
    _, _, terminated, _, info = venv.step([1, 2, 3])
    assert terminated.tolist() == [False, True, True]
    assert info["final_obs"][1] in venv.single_observation_space
    assert info["final_obs"][2] in venv.single_observation_space


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_make_vec_autoreset(mode):
    """gym.make_vec's sync mode builds gymnasium's SyncVectorEnv, which takes vector_kwargs."""
    for value in (mode, mode.value):
        venv = gym.make_vec("robosim/PushCube-v1", num_envs=1, vectorization_mode="sync",
                            vector_kwargs={"autoreset_mode": value})
        assert venv.metadata["autoreset_mode"] == mode
        venv.close()


# -- tests/vector/test_vector_wrapper.py ----------------------------------------------------
class CountingWrapper(VectorWrapper):
    """Counts reset calls (gymnasium's DummyVectorWrapper)."""

    def __init__(self, env):
        super().__init__(env)
        self.counter = 0

    def reset(self, *, seed=None, options=None):
        self.counter += 1
        return super().reset(seed=seed, options=options)


def test_vector_env_wrapper_inheritance_attributes_and_metadata(make):
    venv = make()
    wrapped = CountingWrapper(venv)
    wrapped.reset(seed=0)
    assert wrapped.counter == 1 and wrapped.metadata == venv.metadata
    name, value = ("gravity", 20.0) if make.kind == "listed" else ("max_episode_steps", HORIZON)
    wrapped.env.set_attr(name, [value] * N)
    assert wrapped.env.get_attr(name) == venv.get_attr(name) == (value,) * N
    assert wrapped.env.call(name) == (value,) * N


# -- tests/wrappers/vector/test_record_episode_statistics.py --------------------------------
def test_record_episode_statistics_equals_the_single_env_wrapper():
    """gymnasium's vector RecordEpisodeStatistics over gym.make_vec("robosim/...", "sync")
    agrees with its single-env wrapper inside each env."""
    kwargs = dict(num_envs=2, vectorization_mode="sync", max_episode_steps=3)
    outer = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec("robosim/PushCube-v1", **kwargs))
    inner = gym.make_vec("robosim/PushCube-v1", wrappers=(gym.wrappers.RecordEpisodeStatistics,), **kwargs)
    try:
        assert outer.single_observation_space == inner.single_observation_space
        for venv in (outer, inner):
            venv.reset(seed=123)
        for t in range(7):
            actions = sample(outer, t)
            a, b = outer.step(actions), inner.step(actions)
            for x, y in zip(a[:4], b[:4]):
                assert np.array_equal(x, y)
            if "episode" in a[4]:
                mask = a[4]["_episode"]
                assert np.array_equal(mask, b[4]["_episode"])
                assert np.array_equal(a[4]["episode"]["l"][mask], b[4]["episode"]["l"][mask])
                np.testing.assert_allclose(a[4]["episode"]["r"][mask], b[4]["episode"]["r"][mask], rtol=1e-6)
    finally:
        outer.close()
        inner.close()


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_episode_statistics_with_autoreset_mode(mode, length=3):
    venv = gym.wrappers.vector.RecordEpisodeStatistics(
        TorchToNumpy(make_list_vec([lambda: Counter(Discrete(4), max_count=length) for _ in range(2)], mode)))
    venv.reset(seed=[0, 0])     # Counter counts from its seed: both from 0
    for _t in range(12):
        _, _, terminated, truncated, info = venv.step(np.ones(2, dtype=np.int64))
        done = terminated | truncated
        if done.any():
            assert (info["episode"]["r"][done] == length).all() and (info["episode"]["l"][done] == length).all()
            if mode == AutoresetMode.DISABLED:
                venv.reset(seed=[0, 0], options={"reset_mask": done.copy()})
    assert venv.episode_count > 2
    assert all(r == length for r in venv.return_queue) and all(n == length for n in venv.length_queue)
