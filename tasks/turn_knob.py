"""TurnKnob-v1: turn a spring-loaded lever knob to a target angle.

A fixed square column (5 cm wide, height H) stands in front of the robot, its axis at
x = 0.1 m in the env frame; on top of it a knob turns about the vertical axis: a hub and
a lever of length L pointing toward the robot (-x) at angle 0. Per env, drawn at build
time (`randomizes_build`): H in [0.05, 0.08] m and L in [0.07, 0.10] m. The knob joint
(revolute, limits [-0.2, 1.5] rad) has friction 0.05, damping 0.05 N*m*s/rad and a
return spring, a drive of stiffness 0.3 N*m/rad toward 0 rad, so a released knob turns
back. Each episode the column is shifted by up to +-2 cm in x and y (a root-pose write),
the knob starts at 0 rad, at rest, and a target angle is drawn in [0.4, 0.8] rad
(counter-clockwise seen from above: the lever's tip moves toward -y). The target is
task state (get_task_state); the knob's pose and joint state are physics state.

Success: |knob angle - target| <= 0.08 rad. Never fails.

Dense reward (in [-3, 0]; normalized_dense = dense / 3, in [-1, 0]): per step
  -tanh(5 * |tcp - lever tip|)                          reach the lever (m)
  -2 * clamp(|target - angle| / target, 0, 1)            angle still to turn
and exactly 0 on the success step (the episode ends on success). Sparse: -1 per step,
0 on success.

Task obs (env frame): knob_pose (N, 7) (the column's root pose), knob_qpos (N, 1) rad,
target_angle (N, 1) rad, lever_tip_pos (N, 3) m, tcp_to_lever_tip_pos (N, 3) m.

Scripted solution: with the gripper closed and pointing down, go above a point 4.5 cm
behind the lever (on the side away from the turn), descend to lever height, then push
the lever around its axis with a carrot 0.3 rad ahead of the current angle, stopping at
target + 0.15 rad (the episode ends as the lever enters the success band). It works in
pd_ee_delta_pose and pd_ee_delta_pos; success over 64 seeded episodes (tests/tasks/
test_turn_knob.py): panda and xarm7 100% (pd_ee_delta_pose), so100 98%
(pd_ee_delta_pos); koch 86% (pd_ee_delta_pos).
"""
from __future__ import annotations

import torch

from robosim.agents import Requirements
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim.sim import ArticulationView
from robosim.sim.objects import ArticulationModel, Box, Joint, Link

KNOB_X = 0.1                    # column axis x, env frame (m), before the per-episode offset
OFFSET_XY = 0.02                # |x|, |y| offset per episode (m)
HEIGHT = (0.05, 0.08)           # column height range (m)
LEVER = (0.07, 0.10)            # lever length range (m)
TARGET = (0.4, 0.8)             # target angle range (rad)
TOLERANCE = 0.08                # success band around the target (rad)
SPRING, DAMPING, FRICTION = 0.3, 0.05, 0.05
HUB_HALF_HEIGHT = 0.01          # the lever's axis is this far above the hub's bottom (m)
GAP = 0.002                     # between column top and hub (m)


def knob_model(height: float, lever: float) -> ArticulationModel:
    """Column of `height` with a lever knob of length `lever` on top; the lever frame's
    origin is on the axis at lever height, the lever along its -x."""
    joint = Joint("revolute", pose_in_parent=(0.0, 0.0, height + GAP + HUB_HALF_HEIGHT), axis=(0, 0, 1),
                  limits=(-0.2, 1.5), friction=FRICTION, damping=DAMPING, stiffness=SPRING, target=0.0)
    lever_color = (0.85, 0.3, 0.1, 1.0)
    return ArticulationModel([
        Link("column", [Box((0.025, 0.025, height / 2), pose=(0, 0, height / 2), color=(0.5, 0.5, 0.55, 1.0))]),
        Link("lever", [Box((0.02, 0.02, HUB_HALF_HEIGHT), color=lever_color),
                       Box((lever / 2, 0.008, 0.008), pose=(-lever / 2, 0, 0), color=lever_color)],
             parent="column", joint=joint, density=500.0),
    ], pose=(KNOB_X, 0.0, 0.0), fix_root=True)


@register_task("TurnKnob-v1")
class TurnKnobTask(Task):
    instruction = "Turn the knob to the target angle."
    max_episode_steps = 100
    max_dense_reward = 3.0
    randomizes_build = True
    # workspace: lever tip, turned
    requires = Requirements(min_arm_dof=3, workspace=((-0.02, -0.12, 0.05), (0.12, 0.07, 0.12)))
    scripted_success = {"panda": 1.0, "xarm7": 1.0, "so100": 0.981, "koch": 0.86}   # docs/robots.md
    human_camera = dict(target_position=(0.05, 0.0, 0.1), distance=0.8, yaw=-50.0, pitch=-35.0)

    def build_scene(self, sim, rng):
        sizes = torch.cat([rng.uniform(*HEIGHT, (1,)), rng.uniform(*LEVER, (1,))], dim=1).cpu().double()
        self.height, self.lever = sizes[:, 0].to(self.device), sizes[:, 1].to(self.device)
        rows = sizes.tolist()
        self.knob: ArticulationView = sim.add_articulation("knob", lambda i: knob_model(*rows[i]))
        self.target = torch.zeros(self.num_envs, device=self.device)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        offset = rng.uniform(-OFFSET_XY, OFFSET_XY, (2,))
        pose = torch.zeros(len(env_idx), 7, device=offset.device)
        pose[:, 0] = KNOB_X + offset[:, 0]
        pose[:, 1] = offset[:, 1]
        pose[:, 3] = 1.0
        self.knob.set_root_pose(pose, env_idx)
        zeros = pose.new_zeros(len(env_idx), 1)
        self.knob.set_qpos(zeros, env_idx)
        self.knob.set_qvel(zeros, env_idx)
        self.target[env_idx] = rng.uniform(*TARGET, (1,))[:, 0].to(self.target)

    # -- geometry (env frame) -------------------------------------------------------------
    def angle(self) -> torch.Tensor:
        """float32 (N,) knob angle, rad (counter-clockwise seen from above)."""
        return self.knob.qpos()[:, 0]

    def axis_point(self) -> torch.Tensor:
        """float32 (N, 3) point of the knob's axis at lever height, env frame (m)."""
        p = self.knob.root_pose()[:, :3]
        p[:, 2] += (self.height + GAP + HUB_HALF_HEIGHT).float()
        return p

    def lever_point(self, angle: torch.Tensor, radius: torch.Tensor, behind: float = 0.0) -> torch.Tensor:
        """(N, 3) point `radius` (N,) m out along the lever at `angle` (N,), moved `behind`
        m against the turning direction."""
        c, s = torch.cos(angle), torch.sin(angle)
        out = torch.stack([-c, -s, torch.zeros_like(c)], dim=1)       # along the lever
        ahead = torch.stack([s, -c, torch.zeros_like(c)], dim=1)      # where its tip moves
        return self.axis_point() + radius.unsqueeze(1).to(out) * out - behind * ahead

    # -- hooks ----------------------------------------------------------------------------
    def evaluate(self):
        q = self.angle()
        tip = self.lever_point(q, self.lever)
        error = (self.target - q).abs()
        return {
            "success": error <= TOLERANCE,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "knob_qpos": q,
            "angle_error": error,
            "lever_tip_pos": tip,
            "tcp_to_lever_tip_dist": (tip - self.robot.tcp_pose()[:, :3]).norm(dim=1),
        }

    def dense_reward(self, info):
        remaining = torch.clamp(info["angle_error"] / self.target, 0.0, 1.0)
        reward = -torch.tanh(5 * info["tcp_to_lever_tip_dist"]) - 2.0 * remaining
        return torch.where(info["success"], torch.zeros_like(reward), reward)

    def task_observations(self, info):
        tip = info["lever_tip_pos"]
        return {
            "knob_pose": self.knob.root_pose(),
            "knob_qpos": info["knob_qpos"].unsqueeze(1),
            "target_angle": self.target.unsqueeze(1).clone(),
            "lever_tip_pos": tip,
            "tcp_to_lever_tip_pos": tip - self.robot.tcp_pose()[:, :3],
        }

    def get_task_state(self):
        return self.target.unsqueeze(1).clone()

    def set_task_state(self, state, env_idx):
        self.target[env_idx] = state[:, 0].to(self.target)

    def solution_policy(self):
        return TurnKnobPolicy(self)


class TurnKnobPolicy(PhasePolicy):
    """Phases: 0 above a point `behind` m behind the lever near its tip, 1 down to lever
    height, 2 push around the axis with a carrot `lead` rad ahead (gripper closed and
    pointing down throughout)."""

    behind = 0.045      # m, start point behind the lever
    contact = 0.02      # m, tcp behind the lever's centre line while pushing
    lead = 0.3          # rad
    overshoot = 0.15    # rad past the target: the carrot stops there
    above = 0.06        # m

    def act(self):
        task = self.task
        tcp = self.robot.tcp_pose()[:, :3]
        q = task.angle()
        radius = task.lever - 0.015
        phase = self.phase
        start = task.lever_point(q, radius, self.behind)
        carrot = torch.minimum(q + self.lead, task.target + self.overshoot)
        push = task.lever_point(carrot, radius, self.contact)
        target = torch.where((phase == 2).unsqueeze(1), push, start)
        target[:, 2] += torch.where(phase == 0, self.above, 0.0).to(target)
        err = (target - tcp).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.01)] = 1
        nxt[(phase == 1) & (err < 0.008)] = 2
        rot = grasp_rotation(torch.zeros_like(q))
        gripper = torch.full_like(q, -1.0)
        return ee_action(self.robot, target, rot, gripper), nxt
