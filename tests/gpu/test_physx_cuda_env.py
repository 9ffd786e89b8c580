"""physx_cuda envs: parity with physx_cpu, FK vs PhysX, state round trips, scripted
solutions, no host synchronization in a step. Needs SAPIEN's PhysX GPU library."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from task_ids import declared_tasks

import robosim

pytestmark = pytest.mark.physx_gpu



PARITY_STEPS = 20
# tolerances of the CPU-vs-CUDA comparison on contact-free motion (PD-driven arm in free
# space: the two PhysX solvers differ only in floating-point order)
QPOS_ATOL = 2e-3    # rad
TCP_ATOL = 2e-3     # m

_ROLLOUT = textwrap.dedent("""
    import json, sys, torch, robosim
    backend, steps = sys.argv[1], int(sys.argv[2])
    env = robosim.make("Reach-v1", num_envs=4, obs_mode="state", control_mode="pd_joint_delta_pos",
                       sim_backend=backend)
    env.reset(seed=7)
    gen = torch.Generator().manual_seed(3)
    actions = (torch.rand(steps, 4, env.single_action_space.shape[0], generator=gen) * 2 - 1) * 0.5
    qpos, tcp = [], []
    for a in actions:
        env.step(a.to(env.device))
        qpos.append(env.robot.view.qpos().cpu().tolist())
        tcp.append(env.robot.tcp_pose().cpu().tolist())
    print("RESULT" + json.dumps({"qpos": qpos, "tcp": tcp}))
""")


def _rollout(backend: str) -> dict:
    """Run the rollout in a fresh process (CPU PhysX and GPU PhysX do not share one)."""
    out = subprocess.run([sys.executable, "-c", _ROLLOUT, backend, str(PARITY_STEPS)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    line = [row for row in out.stdout.splitlines() if row.startswith("RESULT")][-1]
    return {k: torch.tensor(v) for k, v in json.loads(line[len("RESULT"):]).items()}


def test_cpu_and_cuda_agree_on_contact_free_motion():
    cpu, cuda = _rollout("physx_cpu"), _rollout("physx_cuda")
    assert cpu["qpos"].shape == cuda["qpos"].shape == (PARITY_STEPS, 4, 9)
    assert (cpu["qpos"] - cuda["qpos"]).abs().max() < QPOS_ATOL
    assert (cpu["tcp"][..., :3] - cuda["tcp"][..., :3]).abs().max() < TCP_ATOL


def test_fk_matches_the_physx_tcp_link_pose():
    env = robosim.make("PickCube-v1", num_envs=16, sim_backend="physx_cuda")
    try:
        env.reset(seed=0)
        for _ in range(5):
            env.step(torch.rand(16, *env.single_action_space.shape, device=env.device) * 2 - 1)
        fk = env.robot.tcp_pose()
        link = env.robot.view.link_pose(env.robot.spec.tcp_link)
        assert fk.device.type == "cuda" and link.device.type == "cuda"
        # tcp_offset is zero for the Panda's panda_hand_tcp link
        assert (fk[:, :3] - link[:, :3]).abs().max() < 1e-3
        dots = (fk[:, 3:] * link[:, 3:]).sum(dim=1).abs()
        assert (1 - dots).max() < 1e-4
        # the base is where the builder put it: the hand is above the table, near the base
        assert (fk[:, 2] > 0).all() and (fk[:, 0] > -0.7).all()
    finally:
        env.close()


@pytest.mark.parametrize("task_id", declared_tasks())
def test_set_state_and_restore_state_round_trip(task_id):
    env = robosim.make(task_id, num_envs=8, sim_backend="physx_cuda")
    try:
        env.reset(seed=1)
        for _ in range(3):
            env.step(torch.rand(8, *env.single_action_space.shape, device=env.device) * 2 - 1)
        saved = env.get_state()
        sid = env.save_state()
        for _ in range(3):
            env.step(torch.rand(8, *env.single_action_space.shape, device=env.device) * 2 - 1)
        env.restore_state(sid)
        restored = env.get_state()
        assert restored.device == saved.device and restored.device.type == "cuda"
        assert torch.allclose(restored, saved, atol=1e-5)
        env.set_state(saved[[2, 5]], env_idx=torch.tensor([2, 5]))
        assert torch.allclose(env.get_state()[[2, 5]], saved[[2, 5]], atol=1e-5)
    finally:
        env.close()


@pytest.mark.parametrize("task_id", ["Reach-v1", "PushCube-v1", "PickCube-v1", "StackCube-v1"])
def test_scripted_solutions_succeed_on_256_envs(task_id):
    n = 256
    env = robosim.make(task_id, num_envs=n, sim_backend="physx_cuda")
    try:
        env.reset(seed=0)
        policy = env.task.solution_policy()
        finished = torch.zeros(n, dtype=torch.bool, device=env.device)
        succeeded = torch.zeros_like(finished)
        for _ in range(env.max_episode_steps):
            _, _, terminated, truncated, info = env.step(policy())
            succeeded |= info["success"] & ~finished
            finished |= terminated | truncated
        rate = succeeded.float().mean().item()
        print(f"{task_id} physx_cuda N={n}: scripted success {rate:.1%}")
        assert rate >= 0.9
    finally:
        env.close()


def test_a_control_step_fetches_each_gpu_buffer_at_most_once():
    env = robosim.make("PickCube-v1", num_envs=8, sim_backend="physx_cuda")
    try:
        env.reset(seed=0)
        action = torch.zeros(8, *env.single_action_space.shape, device=env.device)
        env.step(action)
        before = env.sim.buffers.fetch_calls
        env.step(action)                  # 5 substeps, then evaluation, obs and reward
        # rigid bodies, link poses, qpos, qvel: at most one fetch each (ManiSkill3 makes 8)
        assert env.sim.buffers.fetch_calls - before <= 4
    finally:
        env.close()


def test_a_step_makes_no_host_synchronization():
    env = robosim.make("PickCube-v1", num_envs=64, sim_backend="physx_cuda")
    try:
        env.reset(seed=0)
        action = torch.zeros(64, *env.single_action_space.shape, device=env.device)
        env.step(action)                      # warm-up: kernels load, caches fill
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert obs.device.type == reward.device.type == "cuda"
    finally:
        env.close()


_BIG = textwrap.dedent("""
    import torch, robosim
    env = robosim.make("PickCube-v1", num_envs=4096, sim_backend="physx_cuda")
    env.reset(seed=0)
    for _ in range(20):
        env.step(torch.rand(4096, *env.single_action_space.shape, device=env.device) * 2 - 1)
    torch.cuda.synchronize()
    print("STEPPED 4096")
""")


def test_4096_env_pickcube_has_no_buffer_overflow():
    out = subprocess.run([sys.executable, "-c", _BIG], capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert "STEPPED 4096" in text
    assert "overflow" not in text.lower(), [row for row in text.splitlines() if "overflow" in row.lower()][:5]


def test_one_ground_plane_holds_every_env():
    # one PxScene: one infinite plane for all sub-scenes (N coincident planes before)
    env = robosim.make("PickCube-v1", num_envs=16, sim_backend="physx_cuda")
    try:
        grounds = [e for s in env.sim.sub_scenes for e in s.entities if e.name == "ground"]
        assert len(grounds) == 1
        env.reset(seed=0)
        for _ in range(10):
            env.step(None)
        z = env.sim.actors["cube"].pose()[:, 2]
        assert (z > 0.015).all() and (z < 0.025).all(), z.tolist()
    finally:
        env.close()
