"""The robot-side half of a control step on CUDA (no physics needed): batched FK and
the end-effector IK controller run on device tensors, match the CPU results, and make
no host synchronization."""
from __future__ import annotations

import os

import mani_skill
import torch

from robosim.agents.controllers import make_arm_controller
from robosim.agents.kinematics import SerialChain

PANDA = os.path.join(os.path.dirname(mani_skill.__file__), "assets", "robots", "panda", "panda_v2.urdf")
LIMITS = torch.tensor([[-2.9, 2.9], [-1.76, 1.76], [-2.9, 2.9], [-3.07, -0.07], [-2.9, 2.9], [-0.02, 3.75],
                       [-2.9, 2.9]])


def _inputs(n: int, device: str):
    gen = torch.Generator().manual_seed(0)
    q = LIMITS[:, 0] + (LIMITS[:, 1] - LIMITS[:, 0]) * torch.rand(n, 7, generator=gen)
    action = torch.rand(n, 6, generator=gen) * 2 - 1
    return q.to(device), action.to(device)


def test_fk_and_ik_on_cuda_match_cpu():
    outs = {}
    for device in ("cpu", "cuda"):
        chain = SerialChain(PANDA, "panda_link0", "panda_hand_tcp")
        ctrl = make_arm_controller("pd_ee_delta_pose", LIMITS.to(device), chain)
        q, action = _inputs(256, device)
        pos, rot = chain.forward(q.double())
        # the CPU controller runs on numpy arrays (robosim.agents.step_math), CUDA's on tensors
        targets = ctrl.targets(action.numpy(), q.numpy()) if device == "cpu" else ctrl.targets(action, q)
        outs[device] = (pos.cpu(), rot.cpu(), torch.as_tensor(targets).cpu())
    for a, b in zip(outs["cpu"], outs["cuda"]):
        assert torch.allclose(a.double(), b.double(), atol=1e-5), (a - b).abs().max()


def test_ik_step_makes_no_host_synchronization():
    chain = SerialChain(PANDA, "panda_link0", "panda_hand_tcp")
    ctrl = make_arm_controller("pd_ee_delta_pose", LIMITS.cuda(), chain)
    q, action = _inputs(4096, "cuda")
    ctrl.targets(action, q)                       # warm-up: constants reach the device once
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        targets = ctrl.targets(action, q, version=1)
        pos, _ = chain.forward(targets.double(), version=2)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert targets.shape == (4096, 7) and pos.device.type == "cuda"
