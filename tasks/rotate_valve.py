"""RotateValve-v1: a three-fingered claw turns a valve by a target angle.

A valve stands under the claw (ManiSkill3's RotateValve, built here from primitives): a
fixed mount and, on a free revolute joint about the vertical axis, a hub with three
spokes 120 deg apart (each 8 cm long, 2 cm wide, 2 cm tall; top at VALVE_TOP m), with
joint damping 0.05 N*m*s/rad and friction 0.02. Each episode the valve starts at rest at
a uniform angle in [pi / 2 - 0.3, pi / 2 + 0.3] rad (spokes between the claw's fingers,
which hang at 30, 150 and 270 deg) and a target turn is drawn in [pi / 4, pi / 2] rad
(counter-clockwise seen from above). The robot (default dclaw, fingers pointing down,
base 0.315 m above the ground) starts with straight fingers, tips 2 cm below the spokes'
top. Needs a hand with >= 3 fingers.
The start angle and the target are task state (get_task_state).

Success: the valve has turned by at least the target (angle - start >= target). Never fails.

Dense reward (in [-3, 0]; normalized_dense = dense / 3): per step
  -tanh(10 * mean fingertip distance to the spokes' ring)     reach (m)
  -2 * clamp(1 - turned / target, 0, 1)                       turn still to do
and exactly 0 on the success step. Sparse: -1 per step, 0 on success.

Task obs: valve_qpos (N, 1) rad, valve_qvel (N, 1) rad/s, turned (N, 1) rad, target (N, 1)
rad, fingertip_pos (N, 3 F) m (env frame).

Scripted solution (RotateValvePolicy, dclaw only, pd_joint_delta_pos): a ratchet. 0 bend
every finger up (middle and distal joints SWING_LIFT rad) while swinging it CCW, 1 swing
back CW while lifted, 2 straighten (tips at spoke height), 3 swing CCW: each finger
pushes the spoke ahead of it. Measured: dclaw 100% (64/64, `robosim eval RotateValve-v1
--episodes 64 --num-envs 16`, seed 0). docs/tasks.md also gives a PPO result.
"""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy
from robosim.sim.objects import ArticulationModel, Box, Joint, Link

VALVE_TOP = 0.1          # m
SPOKE = (0.08, 0.01, 0.01)   # spoke length, half width, half height (m)
RING = 0.06              # m, the radius where the fingertips meet the spokes
TARGET = (math.pi / 4, math.pi / 2)
START_JITTER = 0.3       # rad


def valve_model() -> ArticulationModel:
    """A fixed mount and a three-spoke valve turning about +z, spokes' top at VALVE_TOP."""
    joint = Joint("revolute", pose_in_parent=(0.0, 0.0, VALVE_TOP - SPOKE[2]), axis=(0, 0, 1),
                  damping=0.05, friction=0.02)
    spokes = []
    for k in range(3):
        a = 2 * math.pi * k / 3
        quat = (math.cos(a / 2), 0.0, 0.0, math.sin(a / 2))
        spokes.append(Box((SPOKE[0] / 2, SPOKE[1], SPOKE[2]), pose=(SPOKE[0] / 2 * math.cos(a),
                          SPOKE[0] / 2 * math.sin(a), 0.0) + quat, color=(0.8, 0.2, 0.1, 1.0)))
    mount_half = (VALVE_TOP - 2 * SPOKE[2]) / 2
    return ArticulationModel([
        Link("mount", [Box((0.015, 0.015, mount_half), pose=(0, 0, mount_half), color=(0.4, 0.4, 0.45, 1.0))]),
        Link("valve", [Box((0.015, 0.015, SPOKE[2]), color=(0.8, 0.2, 0.1, 1.0))] + spokes,
             parent="mount", joint=joint, density=300.0),
    ], pose=(0.0, 0.0, 0.0), fix_root=True)


@register_task("RotateValve-v1")
class RotateValveTask(Task):
    instruction = "Turn the valve counter-clockwise by the target angle."
    default_robot = "dclaw"
    default_control_mode = "pd_joint_delta_pos"
    requires = Requirements(min_arm_dof=0, min_fingers=3)
    scripted_success = {"dclaw": 1.0}   # 64/64 (docstring)
    robot_base_position = (0.0, 0.0, 0.315)   # straight fingertips 2 cm below the spokes' top
    max_episode_steps = 80
    max_dense_reward = 3.0
    human_camera = dict(target_position=(0.0, 0.0, 0.15), distance=0.6, yaw=-40.0, pitch=-30.0)

    def build_scene(self, sim, rng):
        self.valve = sim.add_articulation("valve", valve_model())
        self.start = torch.zeros(self.num_envs, device=self.device)
        self.target = torch.zeros(self.num_envs, device=self.device)

    def initialize_episode(self, env_idx, rng):
        robot = self.robot
        robot.reset(robot.rest_qpos(len(env_idx)).to(rng.device), env_idx)
        start = rng.uniform(math.pi / 2 - START_JITTER, math.pi / 2 + START_JITTER, (1,))
        self.valve.set_qpos(start, env_idx)
        self.valve.set_qvel(torch.zeros_like(start), env_idx)
        self.start[env_idx] = start[:, 0].to(self.start)
        self.target[env_idx] = rng.uniform(*TARGET, (1,))[:, 0].to(self.target)

    def evaluate(self):
        q = self.valve.qpos()[:, 0]
        turned = q - self.start
        tips = self.robot.fingertip_poses()[:, :, :3]
        radial = tips[:, :, :2].norm(dim=2) - RING
        tip_dist = torch.sqrt(radial ** 2 + (tips[:, :, 2] - VALVE_TOP) ** 2).mean(dim=1)
        return {
            "success": turned >= self.target,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "turned": turned,
            "tip_to_ring_dist": tip_dist,
        }

    def dense_reward(self, info):
        remaining = torch.clamp(1 - info["turned"] / self.target, 0.0, 1.0)
        reward = -torch.tanh(10 * info["tip_to_ring_dist"]) - 2 * remaining
        return torch.where(info["success"], torch.zeros_like(reward), reward)

    def task_observations(self, info):
        return {
            "valve_qpos": self.valve.qpos()[:, :1],
            "valve_qvel": self.valve.qvel()[:, :1],
            "turned": info["turned"].unsqueeze(1),
            "target": self.target.unsqueeze(1).clone(),
            "fingertip_pos": self.robot.fingertip_poses()[:, :, :3].flatten(1),
        }

    def solution_policy(self):
        if self.robot.spec.name != self.default_robot:
            raise NotImplementedError(f"RotateValve-v1's scripted solution drives the {self.default_robot}'s joints, "
                                      f"got robot {self.robot.spec.name!r}")
        return RotateValvePolicy(self)

    def get_task_state(self):
        return torch.stack([self.start, self.target], dim=1)

    def set_task_state(self, state, env_idx):
        self.start[env_idx] = state[:, 0].to(self.start)
        self.target[env_idx] = state[:, 1].to(self.target)


class RotateValvePolicy(PhasePolicy):
    """The ratchet of the module docstring, as joint targets reached with delta actions.
    dclaw's joints: [f1_0, f2_0, f3_0] swing the fingers sideways, [f*_1], [f*_2] bend
    them; +f1_0, -f2_0 and -f3_0 move every tip counter-clockwise seen from above
    (measured)."""

    swing = 0.5        # rad of each finger's sideways joint either side of straight
    lift = 1.2         # rad of the bending joints while lifted
    ccw = (1.0, -1.0, -1.0)

    def act(self):
        robot = self.robot
        phase = self.phase
        q = robot.qpos
        ccw = q.new_tensor(self.ccw)
        forward = ((phase == 0) | (phase == 3)).unsqueeze(1)
        lifted = ((phase == 0) | (phase == 1)).unsqueeze(1).float()
        target = torch.cat([torch.where(forward, self.swing * ccw, -self.swing * ccw),
                            (self.lift * lifted).expand(-1, 6)], dim=1)
        action = torch.clamp((target - q) / robot.spec.joint_delta, -1.0, 1.0)
        reached = (q - target).abs().max(dim=1).values < 0.08
        nxt = torch.where(reached | (self.timer >= 12), (phase + 1) % 4, phase)
        return action, nxt
