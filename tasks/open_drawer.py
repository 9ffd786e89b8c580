"""OpenDrawer-v1: pull a cabinet's drawer open by its handle.

The cabinet (robosim_tasks.cabinet, dimensions in assets/cabinet.json) stands in front
of the robot, its front facing -x, its root at x = 0.27 m; each episode it is shifted
by up to +-2 cm in x and +-6 cm in y and turned by up to +-0.2 rad about z (a
root-pose write), the drawer closed. The drawer slides out along the cabinet's -x
axis, joint range [0, 0.25] m, with damping and friction so it stays where it is left.
Its handle is a vertical bar 7 cm in front of the drawer, centred 0.27 m above the
ground. The cabinet's root pose and joint state are physics state (get_state).

Success: drawer joint position >= 90% of its travel (0.225 m). Never fails.

Dense reward (in [-3, 0]; normalized_dense = dense / 3, in [-1, 0]): per step
  -tanh(5 * |tcp - handle|)                       reach the handle (m)
  -2 * (1 - clamp(q / (0.9 * travel), 0, 1))      drawer still to open
and exactly 0 on the success step. Every other step pays < 0, so hovering near the
handle or half-way never earns more than opening the drawer (the episode ends on
success). Sparse: -1 per step, 0 on success.

Task obs (env frame): cabinet_pose (N, 7), drawer_qpos (N, 1) m, handle_pos (N, 3),
tcp_to_handle_pos (N, 3).

Scripted solution: the gripper pointing down with its jaws across the cabinet's y axis
goes to 8 cm in front of the handle bar at grasp height, slides onto the bar, closes,
then pulls along the drawer's axis with a carrot 3 cm ahead of the handle.
"""
from __future__ import annotations

import torch

from robosim.agents import Requirements
from robosim.core.rotations import matvec3, quat_to_matrix, quat_yaw, yaw_quat
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim.sim import ArticulationView
from robosim_tasks.cabinet import CabinetSpec, cabinet_model

CABINET_X = 0.27           # cabinet root x (env frame, m) before the per-episode offset
OFFSET_X = 0.02            # |x offset| <= this (m)
OFFSET_Y = 0.06            # |y offset| <= this (m)
MAX_YAW = 0.2              # |yaw| <= this (rad)
SUCCESS_FRACTION = 0.9     # of the drawer's travel
GRASP_BELOW_TOP = 0.025    # scripted grasp: tcp this far below the handle bar's top (m)


@register_task("OpenDrawer-v1")
class OpenDrawerTask(Task):
    instruction = "Pull the cabinet's drawer open by its handle."
    max_episode_steps = 100
    max_dense_reward = 3.0
    requires = Requirements(min_arm_dof=5, gripper=True, parallel_gripper=True, min_gripper_opening=0.03,
                            workspace=((-0.23, -0.1, 0.25), (0.05, 0.1, 0.29)))   # handle, pulled out 0.225 m
    scripted_success = {"panda": 1.0, "xarm7": 1.0}   # docs/robots.md
    # from the robot's side, to the front-left of the cabinet: the handle and the drawer's travel
    human_camera = dict(target_position=(0.05, 0.0, 0.2), distance=1.0, yaw=-60.0, pitch=-25.0)

    def build_scene(self, sim, rng):
        self.spec = CabinetSpec.load()
        self.cabinet: ArticulationView = sim.add_articulation("cabinet", cabinet_model(self.spec, (CABINET_X, 0, 0)))
        device = self.device
        self._handle_local = torch.tensor(self.spec.handle_in_drawer, device=device)
        self._open_local = torch.tensor([-1.0, 0.0, 0.0], device=device)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        m = len(env_idx)
        x = CABINET_X + rng.uniform(-OFFSET_X, OFFSET_X, (1,))
        y = rng.uniform(-OFFSET_Y, OFFSET_Y, (1,))
        yaw = rng.uniform(-MAX_YAW, MAX_YAW)
        pose = torch.cat([x, y, torch.zeros_like(x), yaw_quat(yaw)], dim=1)
        self.cabinet.set_root_pose(pose, env_idx)
        zeros = pose.new_zeros(m, self.cabinet.dof)
        self.cabinet.set_qpos(zeros, env_idx)
        self.cabinet.set_qvel(zeros, env_idx)

    # -- geometry (env frame) -------------------------------------------------------------
    def drawer_qpos(self) -> torch.Tensor:
        """float32 (N,) drawer opening, m."""
        return self.cabinet.qpos()[:, 0]

    def handle_position(self) -> torch.Tensor:
        """float32 (N, 3) centre of the handle bar, env frame, m."""
        drawer = self.cabinet.link_pose("drawer")
        rot = quat_to_matrix(drawer[:, 3:])
        return drawer[:, :3] + matvec3(rot, self._handle_local.expand(len(drawer), 3))

    def open_direction(self) -> torch.Tensor:
        """float32 (N, 3) unit vector along which the drawer opens, env frame."""
        rot = quat_to_matrix(self.cabinet.root_pose()[:, 3:])
        return matvec3(rot, self._open_local.expand(len(rot), 3))

    # -- hooks ----------------------------------------------------------------------------
    def evaluate(self):
        q = self.drawer_qpos()
        tcp = self.robot.tcp_pose()[:, :3]
        handle = self.handle_position()
        progress = torch.clamp(q / (SUCCESS_FRACTION * self.spec.travel), 0.0, 1.0)
        return {
            "success": q >= SUCCESS_FRACTION * self.spec.travel,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "drawer_qpos": q,
            "open_progress": progress,
            "tcp_to_handle_dist": (handle - tcp).norm(dim=1),
        }

    def dense_reward(self, info):
        reward = -torch.tanh(5 * info["tcp_to_handle_dist"]) - 2.0 * (1.0 - info["open_progress"])
        return torch.where(info["success"], torch.zeros_like(reward), reward)

    def task_observations(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        handle = self.handle_position()
        return {
            "cabinet_pose": self.cabinet.root_pose(),
            "drawer_qpos": info["drawer_qpos"].unsqueeze(1),
            "handle_pos": handle,
            "tcp_to_handle_pos": handle - tcp,
        }

    def solution_policy(self):
        return OpenDrawerPolicy(self)


class OpenDrawerPolicy(PhasePolicy):
    """Phases: 0 to 8 cm in front of the handle bar at grasp height (gripper pointing
    down, fingers across the cabinet's y axis, open), 1 slide onto the bar so that its
    top is 2.5 cm above the tcp, 2 close for 5 steps, 3 pull along the opening
    direction with a carrot."""

    approach = 0.08
    carrot = 0.03

    def act(self):
        task = self.task
        tcp = self.robot.tcp_pose()[:, :3]
        grasp = task.handle_position()
        grasp[:, 2] += task.spec.handle["length"] / 2 - GRASP_BELOW_TOP
        out = task.open_direction()
        rot = grasp_rotation(quat_yaw(task.cabinet.root_pose()[:, 3:]))
        phase = self.phase
        front = grasp + self.approach * out
        target = torch.where((phase == 0).unsqueeze(1), front, grasp)
        target = torch.where((phase == 3).unsqueeze(1), grasp + self.carrot * out, target)
        gripper = torch.where(phase >= 2, -1.0, 1.0)
        err = (target - tcp).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015)] = 1
        nxt[(phase == 1) & (err < 0.006)] = 2
        nxt[(phase == 2) & (self.timer >= 5)] = 3
        return ee_action(self.robot, target, rot, gripper.float()), nxt
