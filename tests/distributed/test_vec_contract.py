"""RayVecEnv against the single-process vector env, side by side in all three autoreset
modes (PickCube-v1, 4 envs on 2 Ray workers, 4-step episodes), pipelined stepping,
and bad input: every bad input raises on the driver before any worker changes."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import robosim
from robosim.distributed import RayVecEnv, WorkerError
from robosim.vector import make_vec

from .conftest import WORKER_CPUS, assert_same_tree

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers

N, K, MAX_STEPS = 4, 2, 4
# float rows may differ in the last bits: the two sides place env i at different spots
# of their shared PhysX scenes (seeding.py tests bit-exactness where it is guaranteed)
ATOL = 1e-4


def pair(mode):
    ray_venv = RayVecEnv("PickCube-v1", N, K, autoreset_mode=mode, worker_cpus=WORKER_CPUS,
                         max_episode_steps=MAX_STEPS)
    return ray_venv, make_vec("PickCube-v1", num_envs=N, autoreset_mode=mode, max_episode_steps=MAX_STEPS)


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_outputs_match_the_single_process_vector_env_in_every_mode(local_ray, mode):
    ray_venv, ref = pair(mode)
    assert ray_venv.metadata["autoreset_mode"] is mode and ray_venv.num_envs == N
    assert ray_venv.observation_space == ref.observation_space and ray_venv.action_space == ref.action_space
    gen = torch.Generator().manual_seed(7)
    low, high = torch.as_tensor(ref.single_action_space.low), torch.as_tensor(ref.single_action_space.high)
    assert_same_tree(ray_venv.reset(seed=11), ref.reset(seed=11), "reset", ATOL)
    ended = torch.zeros(N, dtype=torch.bool)
    saw_final = False
    for t in range(3 * MAX_STEPS + 3):
        if mode == AutoresetMode.DISABLED and ended.any():
            opts = {"reset_mask": ended.numpy()}
            assert_same_tree(ray_venv.reset(options=opts), ref.reset(options=opts), f"t={t} reset_mask", ATOL)
        elif t == 6:  # a partial reset by global index: rows 1 and 2 live on different workers
            opts = {"env_idx": torch.tensor([1, 2])}
            assert_same_tree(ray_venv.reset(options=opts), ref.reset(options=opts), f"t={t} env_idx", ATOL)
        action = low + (high - low) * torch.rand((N, len(low)), generator=gen)
        if mode == AutoresetMode.NEXT_STEP:
            action[ended] = float("nan")  # ignored in reset rows on both sides
        got, want = ray_venv.step(action), ref.step(action)
        assert_same_tree(got, want, f"t={t} step", ATOL)
        saw_final |= "final_obs" in want[4]
        ended = want[2] | want[3]
    assert saw_final == (mode == AutoresetMode.SAME_STEP)
    ray_venv.close()
    ray_venv.close()  # idempotent
    ref.close()


def test_step_async_then_step_wait_gives_the_step_and_refuses_misuse(local_ray):
    ray_venv, ref = pair(AutoresetMode.SAME_STEP)
    ray_venv.reset(seed=3)
    ref.reset(seed=3)
    action = torch.zeros(N, ref.single_action_space.shape[0])
    for t in range(6):
        ray_venv.step_async(action)
        with pytest.raises(RuntimeError, match=r"step_async\(\) called while a step_async\(\) awaits its step_wait"):
            ray_venv.step_async(action)
        with pytest.raises(RuntimeError, match=r"reset\(\) called while a step_async\(\) awaits"):
            ray_venv.reset()
        got = ray_venv.step_wait()
        assert_same_tree(got, ref.step(action), f"t={t}", ATOL)
    # how much of a step the driver gets back is a speed figure: `robosim bench --workers` measures it
    with pytest.raises(RuntimeError, match=r"step_wait\(\) needs a step_async\(\) before it"):
        ray_venv.step_wait()
    ray_venv.close()
    ref.close()


@pytest.fixture(scope="module")
def disabled_pair(local_ray):
    ray_venv, ref = pair(AutoresetMode.DISABLED)
    yield ray_venv, ref
    ray_venv.close()
    ref.close()


def still_in_lockstep(ray_venv, ref):
    """Both sides step on together: the failed call changed nothing on any worker."""
    action = torch.zeros(N, ref.single_action_space.shape[0])
    assert_same_tree(ray_venv.step(action), ref.step(action), "after the error", ATOL)


@pytest.mark.parametrize("options, error, match", [
    ({"reset_mask": np.array([True, False])}, ValueError,
     r"options\['reset_mask'\] must have shape \(4,\), got \(2,\)"),
    ({"reset_mask": np.array([1, 0, 0, 1])}, ValueError,
     r"options\['reset_mask'\] must have dtype bool, got torch.int64"),
    ({"reset_mask": np.zeros(4, dtype=bool)}, ValueError,
     r"options\['reset_mask'\] must contain at least one True value, got \[False, False, False, False\]"),
    ({"reset_mask": [True, False, True, True]}, TypeError,
     r"options\['reset_mask'\] must be a bool tensor/array of shape \(4,\), got list"),
    ({"reset_mask": np.ones(4, dtype=bool), "env_idx": [0]}, ValueError, r"either 'reset_mask' or 'env_idx', got both"),
    ({"env_idx": [4]}, ValueError, r"options\['env_idx'\] entries must be in \[0, 3\], got \[4\]"),
    ({"env_idx": []}, ValueError, r"options\['env_idx'\] must name at least one env"),
])
def test_bad_reset_masks_raise_like_one_process_and_touch_no_worker(disabled_pair, options, error, match):
    ray_venv, ref = disabled_pair
    ray_venv.reset(seed=0)
    ref.reset(seed=0)
    with pytest.raises(error, match=match):
        ref.reset(options=options)
    with pytest.raises(error, match=match):
        ray_venv.reset(options=options)
    still_in_lockstep(ray_venv, ref)


def test_bad_actions_and_seeds_raise_before_any_worker_steps(disabled_pair):
    ray_venv, ref = disabled_pair
    ray_venv.reset(seed=1)
    ref.reset(seed=1)
    a = ref.single_action_space.shape[0]
    with pytest.raises(ValueError, match=rf"actions must have shape \(4, {a}\) \(num_envs=4\), got \(3, {a}\)"):
        ray_venv.step(torch.zeros(3, a))
    with pytest.raises(ValueError, match=rf"actions must have shape \(4, {a}\) \(num_envs=4\), got \({a},\)"):
        ray_venv.step(torch.zeros(a))
    with pytest.raises(TypeError, match=r"actions must be a torch.Tensor or numpy array .* got list"):
        ray_venv.step([[0.0] * a] * N)
    bad = torch.zeros(N, a)
    bad[3, 2] = float("nan")  # only worker 1's rows are bad: worker 0 must not step either
    with pytest.raises(ValueError, match=r"action must be finite, got NaN/inf at index \[3, 2\]"):
        ray_venv.step(bad)
    with pytest.raises(ValueError, match=r"action must have a floating dtype \(float32 expected\), got torch.int64"):
        ray_venv.step(torch.zeros(N, a, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"seed list must have one entry per env \(4\), got 2"):
        ray_venv.reset(seed=[1, 2], options={"env_idx": [0, 1]})
    with pytest.raises(ValueError, match=r"seed must be >= 0, got -1"):
        ray_venv.reset(seed=-1)
    still_in_lockstep(ray_venv, ref)


def test_stepping_an_ended_env_in_disabled_mode_names_the_global_envs(disabled_pair):
    ray_venv, ref = disabled_pair
    ray_venv.reset(seed=2)
    action = torch.zeros(N, ref.single_action_space.shape[0])
    for _ in range(MAX_STEPS):
        ray_venv.step(action)
    with pytest.raises(ValueError, match=r"envs \[0, 1, 2, 3\] ended .* reset them with reset\(options="):
        ray_venv.step(action)
    obs, info = ray_venv.reset(options={"reset_mask": np.array([False, False, True, False])})
    assert info["elapsed_steps"].tolist() == [MAX_STEPS, MAX_STEPS, 0, MAX_STEPS]


def test_an_error_inside_a_worker_reaches_the_driver_with_its_worker_and_traceback(disabled_pair):
    ray_venv, ref = disabled_pair
    ray_venv.reset(seed=0)
    # a ValueError raised by the worker's env (the driver passes unknown options on)
    with pytest.raises(ValueError, match=r"(?s)worker 0 \(envs 0-1\) on .* raised ValueError: options keys must be "
                                         r"among \['env_idx', 'reconfigure'\].*remote traceback.*base_env.py"):
        ray_venv.reset(options={"colour": "red"})
    # any other exception: WorkerError with the worker id and the remote traceback
    import ray

    # worker 1's robosim env is closed behind the driver's back (Ray runs the function in the actor)
    ray.get(ray_venv.pool.actors[1].__ray_call__.remote(lambda worker: worker.env.close()))
    with pytest.raises(WorkerError, match=r"(?s)worker 1 \(envs 2-3\) on .* raised RuntimeError: this "
                                          r"PickCubeTask env was closed.*remote traceback") as err:
        ray_venv.step(torch.zeros(N, ref.single_action_space.shape[0]))
    assert err.value.worker_id == 1 and "base_env.py" in err.value.remote_traceback
    ray_venv.pool.call("build", {1: ()})
    ray_venv.reset(seed=0)  # usable again once rebuilt


def test_bad_construction_arguments_fail_before_or_at_build_with_the_worker_named(local_ray):
    with pytest.raises(ValueError, match=r"workers must be >= 1, got 0"):
        robosim.make_vec("PickCube-v1", num_envs=4, workers=0)
    with pytest.raises(ValueError,
                       match=r"workers must be <= num_envs \(4\): every worker needs an env, got workers=5"):
        robosim.make_vec("PickCube-v1", num_envs=4, workers=5)
    with pytest.raises(TypeError, match=r"workers must be an int, got str"):
        robosim.make_vec("PickCube-v1", num_envs=4, workers="2")
    with pytest.raises(ValueError, match=r"task_id must be one of .* got 'NoSuchTask-v0'"):
        robosim.make_vec("NoSuchTask-v0", num_envs=4, workers=2)
    with pytest.raises(ValueError, match=r"autoreset_mode must be a gymnasium.vector.AutoresetMode"):
        robosim.make_vec("PickCube-v1", num_envs=4, workers=2, autoreset_mode="same_step")
    # every make() keyword is judged on the driver (robosim.EnvSpec), before any worker starts
    with pytest.raises(ValueError, match=r"^obs_mode must be one of .* got 'bogus'"):
        robosim.make_vec("PickCube-v1", num_envs=4, workers=2, worker_cpus=WORKER_CPUS, obs_mode="bogus")
    # what only the worker's build can judge (the device its torch sees): the remote error, named
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"(?s)worker 0 \(envs 0-1\) raised ValueError: sim_device must be "
                                             r"a device torch can use.*remote traceback.*ip=.*base_env.py"):
            robosim.make_vec("PickCube-v1", num_envs=4, workers=2, worker_cpus=WORKER_CPUS,
                             sim_backend="physx_gpu_emulated", sim_device="cuda")
