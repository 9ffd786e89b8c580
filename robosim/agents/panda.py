"""Franka Emika Panda, loaded from the URDF and meshes inside the mani-skill package."""
from __future__ import annotations

import math
import os

import sapien
import torch

from robosim.agents.controllers import CONTROL_MODES, GripperController, make_arm_controller
from robosim.agents.kinematics import SerialChain, matrix_to_quat
from robosim.sim.scene import SimScene
from robosim.sim.views import ArticulationView


def panda_urdf_path() -> str:
    """Path of mani-skill's panda_v2.urdf (meshes lie beside it)."""
    import mani_skill

    path = os.path.join(os.path.dirname(mani_skill.__file__), "assets", "robots", "panda", "panda_v2.urdf")
    if not os.path.exists(path):
        raise FileNotFoundError(f"Panda URDF not found at {path}; is mani-skill 3.x installed?")
    return path


class Panda:
    """Batched Panda arm + parallel gripper in a SimScene.

    qpos layout (N, 9): 7 arm joints (rad) then 2 finger joints (m, 0 = closed).
    The base stands at `base_position` (env frame, unrotated)."""

    arm_joints = [f"panda_joint{i}" for i in range(1, 8)]
    finger_joints = ["panda_finger_joint1", "panda_finger_joint2"]
    tcp_link = "panda_hand_tcp"
    rest_qpos = (0.0, math.pi / 8, 0.0, -math.pi * 5 / 8, 0.0, math.pi * 3 / 4, math.pi / 4, 0.04, 0.04)
    stiffness, damping, force_limit = 1e3, 1e2, 100.0

    def __init__(self, control_mode: str, base_position=(-0.615, 0.0, 0.0)):
        if control_mode not in CONTROL_MODES:
            raise ValueError(f"control_mode must be one of {CONTROL_MODES}, got {control_mode!r}")
        self.control_mode = control_mode
        self.urdf_path = panda_urdf_path()
        self.base_position = torch.tensor(base_position, dtype=torch.float32)
        self.chain = SerialChain(self.urdf_path, "panda_link0", self.tcp_link)
        self.view: ArticulationView | None = None
        self._last_tcp: tuple[torch.Tensor, torch.Tensor] | None = None   # (qpos, tcp pose)

    # -- build ------------------------------------------------------------------
    def load(self, sim: SimScene) -> ArticulationView:
        """Add one Panda per env to `sim` (gravity off on its links: the PD drives
        then hold a pose exactly, as with gravity compensation on a real arm)."""
        def load_one(scene: sapien.Scene, env_index: int) -> sapien.physx.PhysxArticulation:
            loader = scene.create_urdf_loader()
            loader.fix_root_link = True
            for finger in ("panda_leftfinger", "panda_rightfinger"):
                loader.set_link_material(finger, 2.0, 2.0, 0.0)  # high-friction pads
            robot = loader.load(self.urdf_path)
            robot.set_name(f"panda_{env_index}")
            for link in robot.get_links():
                link.disable_gravity = True
            for joint in robot.get_active_joints():
                joint.set_drive_properties(self.stiffness, self.damping, self.force_limit)
            return robot

        self.view = sim.load_articulations("panda", load_one)
        if self.view.joint_names != self.arm_joints + self.finger_joints:
            raise RuntimeError(f"unexpected Panda joint order {self.view.joint_names}")
        limits = self.view.qlimits().to(sim.device)
        self.arm = make_arm_controller(self.control_mode, limits[:7], self.chain)
        self.gripper = GripperController()
        low, high = self.arm.action_bounds()
        self.action_low = torch.cat([low.cpu(), -torch.ones(1)])     # CPU: becomes the gym space
        self.action_high = torch.cat([high.cpu(), torch.ones(1)])
        return self.view

    # -- episode / control ----------------------------------------------------------
    def reset(self, qpos: torch.Tensor, env_idx: torch.Tensor) -> None:
        """Place env_idx's robots at qpos (M, 9), at rest, with drive targets = qpos."""
        n = len(env_idx)
        base = torch.cat([self.base_position, torch.tensor([1.0, 0, 0, 0])]).expand(n, 7)
        self.view.set_root_pose(base, env_idx)
        self.view.set_qpos(qpos, env_idx)
        self.view.set_qvel(torch.zeros_like(qpos), env_idx)
        self.view.set_drive_targets(qpos, env_idx)

    def apply_action(self, action: torch.Tensor) -> None:
        """Turn a clipped action (N, action_dim) into drive targets for all envs."""
        qpos = self.view.qpos()
        arm = self.arm.targets(action[:, :-1], qpos[:, :7])
        self.view.set_drive_targets(torch.cat([arm, self.gripper.targets(action[:, -1:])], dim=1))

    # -- readouts -------------------------------------------------------------------
    def tcp_pose(self, qpos: torch.Tensor) -> torch.Tensor:
        """float32 (N, 7) tool-centre-point pose [xyz, wxyz] in the env frame, from FK.

        Reward, success check and obs of one step all ask for the same qpos: the last
        result is reused while qpos is bit-for-bit equal (FK is ~500 small torch ops)."""
        last = self._last_tcp
        if last is not None and last[0].shape == qpos.shape and last[0].dtype == qpos.dtype and torch.equal(last[0], qpos):
            return last[1].clone()
        pos, rot = self.chain.forward(qpos[:, :7].double())
        tcp = torch.cat([pos + self.base_position.to(pos), matrix_to_quat(rot)], dim=1).float()
        self._last_tcp = (qpos.detach().clone(), tcp)
        return tcp.clone()

    @staticmethod
    def gripper_width(qpos: torch.Tensor) -> torch.Tensor:
        """(N,) distance between the fingers, m."""
        return qpos[:, 7] + qpos[:, 8]


def rest_qpos(n: int) -> torch.Tensor:
    """float32 (n, 9) rest configuration."""
    return torch.tensor(Panda.rest_qpos, dtype=torch.float32).expand(n, 9).clone()


