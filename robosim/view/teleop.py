"""Teleoperation from the browser: a transform gizmo on env 0's TCP and a gripper button
drive the end-effector controller.

Each control step the action is the difference between the gizmo's pose and the TCP's
(robosim.envs.solutions.ee_action: position error / 0.1 m and rotation error / 0.1 rad,
each clipped to [-1, 1]), so the TCP follows the gizmo at the controller's top speed and
stops on it. When an episode starts, the gizmo jumps back onto the TCP.
"""
from __future__ import annotations

from typing import Any

import torch

from robosim.core.rotations import quat_to_matrix
from robosim.envs.solutions import ee_action
from robosim.view.viewer import Viewer

TELEOP_CONTROL_MODE = "pd_ee_delta_pose"
OPEN, CLOSED = 1.0, -1.0   # the gripper entry of an ee action


class Teleop:
    """The gizmo (`gizmo`, a viser TransformControlsHandle at /env0/teleop, env 0's frame)
    and the gripper button of `viewer`'s one-env batch; `policy(obs) -> action (1, A)`."""

    def __init__(self, viewer: Viewer):
        env = viewer.env
        if env.num_envs != 1:
            raise ValueError(f"teleoperation drives one env, got num_envs={env.num_envs} (use -n 1)")
        if env.robot.control_mode != TELEOP_CONTROL_MODE:
            raise ValueError(f"teleoperation needs control_mode {TELEOP_CONTROL_MODE!r}, "
                             f"got {env.robot.control_mode!r}")
        self.env, self.viewer = env, viewer
        self.gripper = OPEN
        tcp = env.robot.tcp_pose()[0].cpu().numpy()
        self.gizmo = viewer.server.scene.add_transform_controls(
            "/env0/teleop", scale=0.2, line_width=3.0, position=tcp[:3], wxyz=tcp[3:])
        gui = viewer.server.gui
        with gui.add_folder("teleop"):
            self.gripper_button = gui.add_button("close gripper")
            self.snap_button = gui.add_button("gizmo to TCP")
        self.gripper_button.on_click(lambda _: self.toggle_gripper())
        self.snap_button.on_click(lambda _: self.snap())

    def toggle_gripper(self) -> None:
        self.gripper = CLOSED if self.gripper == OPEN else OPEN
        self.gripper_button.label = "open gripper" if self.gripper == CLOSED else "close gripper"

    def snap(self) -> None:
        """Put the gizmo on the TCP (the TCP then holds still)."""
        tcp = self.env.robot.tcp_pose()[0].cpu().numpy()
        self.gizmo.position, self.gizmo.wxyz = tcp[:3], tcp[3:]

    def policy(self, obs: Any) -> torch.Tensor:
        """float32 (1, A): toward the gizmo (env 0's frame), gripper as toggled."""
        if int(self.env.elapsed_steps[0]) == 0:   # a new episode: the gizmo starts on the TCP
            self.snap()
            self.gripper = OPEN
        target = torch.as_tensor(self.gizmo.position, dtype=torch.float32).reshape(1, 3)
        rot = quat_to_matrix(torch.as_tensor(self.gizmo.wxyz, dtype=torch.float64).reshape(1, 4))
        return ee_action(self.env.robot, target, rot, torch.tensor([self.gripper]))
