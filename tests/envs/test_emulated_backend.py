"""The task-level suite on the emulated GPU backend (physx_gpu_emulated): the GPU code path
(robosim/sim/gpu/scene.py and its views) runs every built-in task, state save/restore,
partial resets, object pools, randomization, cameras, recording and replay, and the
vector env, on CPU PhysX.

Tolerance against physx_cpu (physics_isolation="separate", same seeds): a reset state
agrees within 1e-5. The CPU envs sit 67 m from the world origin, where float32 positions
have a 7.6e-6 m step, while every emulated sub-scene sits at the origin, so the two are
not bit-identical; after contacts the trajectories drift apart (measured up to 0.12 on
PickCube after 30 steps, docs/gpu.md), so later steps are compared by task outcome.
"""
from __future__ import annotations

import os

import pytest
import torch
from task_ids import declared_tasks

import robosim
from robosim.record import RecordEpisode, replay
from robosim.vector import make_vec

# scripts/gpu_check.sh runs this file again with every buffer and tensor on CUDA
EMU = dict(sim_backend="physx_gpu_emulated", sim_device=os.environ.get("ROBOSIM_TEST_SIM_DEVICE", "cpu"))
SEED = 0




def _rollout(env) -> torch.Tensor:
    """Run the task's scripted solution for one episode from a seeded reset; (N,) success."""
    env.reset(seed=SEED)
    policy = env.task.solution_policy()
    success = torch.zeros(env.num_envs, dtype=torch.bool)
    for _ in range(env.max_episode_steps):
        _, _, terminated, truncated, info = env.step(policy())
        success |= info["success"].cpu()
        if bool((terminated | truncated).all()):
            break
    return success


def test_the_registry_holds_every_declared_task():
    assert set(declared_tasks()) <= set(robosim.list_tasks())


@pytest.mark.parametrize("task_id", declared_tasks())
def test_every_task_is_solved_and_starts_as_on_cpu(task_id):
    emulated = robosim.make(task_id, num_envs=2, **EMU)
    cpu = robosim.make(task_id, num_envs=2, physics_isolation="separate")
    try:
        emulated.reset(seed=SEED)
        cpu.reset(seed=SEED)
        assert (emulated.get_state().cpu() - cpu.get_state()).abs().max() < 1e-5
        if type(emulated.task).solution_policy is not robosim.Task.solution_policy:   # else: the start only
            assert _rollout(emulated).all(), f"{task_id}'s scripted solution failed on physx_gpu_emulated"
    finally:
        emulated.close()
        cpu.close()


@pytest.fixture(scope="module")
def pick():
    env = robosim.make("PickCube-v1", num_envs=3, **EMU)
    yield env
    env.close()


def test_restore_repeats_the_trajectory_exactly(pick):
    pick.reset(seed=1)
    policy = pick.task.solution_policy()
    for _ in range(5):
        pick.step(policy())
    sid = pick.save_state()
    saved = pick.get_state().clone()
    actions, states = [], []
    for _ in range(8):
        actions.append(policy())
        pick.step(actions[-1])
        states.append(pick.get_state().clone())
    pick.restore_state(sid)
    assert torch.equal(pick.get_state(), saved)
    for action, expected in zip(actions, states):
        pick.step(action)
        assert torch.equal(pick.get_state(), expected)


def test_set_state_checks_before_writing(pick):
    pick.reset(seed=2)
    before = pick.get_state().clone()
    bad = before.clone()
    bad[0, 3:7] = torch.tensor([2.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="unit quaternion"):
        pick.set_state(bad)
    assert torch.equal(pick.get_state(), before)


def test_partial_reset_leaves_other_envs_untouched(pick):
    pick.reset(seed=3)
    policy = pick.task.solution_policy()
    for _ in range(4):
        pick.step(policy())
    before = pick.get_state().clone()
    pick.reset(options={"env_idx": torch.tensor([1])})
    after = pick.get_state()
    assert torch.equal(after[[0, 2]], before[[0, 2]])
    assert not torch.equal(after[1], before[1])


def test_object_pool_swaps_variants_through_the_buffer():
    env = robosim.make("PickObject-v1", num_envs=2, **EMU)
    try:
        variants = set()
        for seed in range(4):
            env.reset(seed=seed)
            variants |= set(env.sim.actors["object"].active.tolist())
            pose = env.sim.actors["object"].pose()
            assert (pose[:, :2].abs() < 0.3).all()       # the active variant is in the workspace
        assert len(variants) > 1
        state = env.get_state().clone()
        env.reset(seed=9)
        env.set_state(state)
        assert torch.equal(env.get_state(), state)
    finally:
        env.close()


RANDOMIZATION = {
    "nudge": {"mode": "reset", "target": "object:cube", "property": "position",
              "dist": {"uniform": [[-0.01, -0.01, 0.0], [0.01, 0.01, 0.0]]}},
    "turn": {"mode": "reset", "target": "object:cube", "property": "yaw", "dist": {"uniform": [-0.5, 0.5]}},
    "push": {"mode": "interval", "target": "object:cube", "property": "velocity",
             "dist": {"uniform": [[-0.1, -0.1, 0, 0, 0, 0], [0.1, 0.1, 0, 0, 0, 0]]},
             "period_s": {"uniform": [0.1, 0.2]}},
    "paint": {"mode": "reset", "target": "object:cube", "property": "color",
              "dist": {"uniform": [[0.2, 0.2, 0.2], [1.0, 1.0, 1.0]]}},
    "light": {"mode": "reconfigure", "target": "light", "property": "intensity", "dist": {"uniform": [0.5, 1.5]}},
}


def test_randomization_events_run_and_match_per_env_seeds():
    runs = []
    for num_envs in (1, 2):
        env = robosim.make("PickCube-v1", num_envs=num_envs, randomization=RANDOMIZATION, **EMU)
        try:
            env.reset(seed=5)
            for _ in range(6):
                env.step(None)
            runs.append(env.get_state()[0].clone())
        finally:
            env.close()
    assert torch.allclose(runs[0], runs[1], atol=1e-6)    # env 0's events depend on its seed only


@pytest.mark.parametrize("prop", ["mass", "friction", "linear_damping"])
def test_physical_property_events_are_refused_at_make(prop):
    event = {"e": {"mode": "reset", "target": "object:cube", "property": prop, "dist": {"uniform": [0.5, 1.5]}}}
    with pytest.raises(ValueError, match=f"sets property '{prop}'.*physx_gpu_emulated"):
        robosim.make("PickCube-v1", num_envs=1, randomization=event, **EMU)


def test_cameras_render_what_the_cpu_backend_renders():
    kwargs = dict(num_envs=2, obs_mode="rgbd", sensor_configs={"width": 64, "height": 64})
    images = []
    for backend in (EMU, dict(physics_isolation="separate")):
        env = robosim.make("PickCube-v1", **kwargs, **backend)
        try:
            obs, _ = env.reset(seed=SEED)
            seg = env.cameras.sensors.capture(["segmentation"])
            to_cpu = lambda tree: {c: {k: v.cpu() for k, v in d.items()} for c, d in tree.items()}  # noqa: E731
            images.append((to_cpu(obs["sensor_data"]), to_cpu(seg)))
        finally:
            env.close()
    (emu, emu_seg), (cpu, cpu_seg) = images
    for camera in cpu:
        rgb_e, rgb_c = emu[camera]["rgb"].float(), cpu[camera]["rgb"].float()
        assert rgb_e.shape == rgb_c.shape and rgb_e.std() > 5            # a real picture, not a blank
        assert (rgb_e - rgb_c).abs().mean() < 1.0
        assert (emu[camera]["depth"] - cpu[camera]["depth"]).abs().max() < 1e-3
        agree = (emu_seg[camera]["segmentation"] == cpu_seg[camera]["segmentation"]).float().mean()
        assert agree > 0.999


@pytest.mark.parametrize("render_mode", ["sensors", "rgb_array"])
def test_render_modes_give_frames(render_mode):
    env = robosim.make("PickCube-v1", num_envs=2, render_mode=render_mode, **EMU)
    try:
        env.reset(seed=SEED)
        frame = env.render()
        assert frame.dtype == torch.uint8 and frame.shape[0] == 2 and frame.shape[-1] == 3
        assert frame.float().std() > 5     # a real picture, not a blank
    finally:
        env.close()


def test_recording_replays_exactly(tmp_path):
    path = str(tmp_path / "emu.h5")
    env = RecordEpisode(robosim.make("PickCube-v1", num_envs=2, **EMU), trajectory=path)
    try:
        env.reset(seed=SEED)
        policy = env.env.task.solution_policy()
        for _ in range(30):
            env.step(policy())
    finally:
        env.close()
    report = replay(path)
    assert report.episodes >= 2 and report.exact, report.summary()


def test_vector_env_autoresets():
    vec = make_vec("PickCube-v1", num_envs=2, **EMU)
    try:
        vec.reset(seed=SEED)
        ended = 0
        for _ in range(60):
            _, _, terminated, truncated, _ = vec.step(vec.action_space.sample() * 0)
            ended += int((terminated | truncated).sum())     # torch on the env's device
        assert ended >= 2       # 50-step episodes: both envs ended and went on
    finally:
        vec.close()


@pytest.mark.parametrize("backend", [EMU, dict(sim_backend="physx_cpu")], ids=["emulated", "physx_cpu"])
def test_state_layout_names_every_column(backend):
    env = robosim.make("PickObject-v1", num_envs=2, **backend)
    try:
        env.reset(seed=SEED)
        layout, state = env.sim.state_layout(), env.sim.get_state()
        covered = sorted(i for cols in layout.values() for c in cols.values() for i in range(c.start, c.stop))
        assert covered == list(range(env.sim.state_dim))            # every column once
        robot = env.robot.view
        assert torch.equal(state[:, layout[robot.name]["qpos"]], robot.qpos())
        pool = env.sim.actors["object"]
        assert torch.equal(state[:, layout["object"]["pose"]], pool.pose())
        assert state[:, layout["object"]["variant"]].flatten().tolist() == [float(k) for k in pool.active]
    finally:
        env.close()
