"""SO100Handover-v1: a pair of SO-100 arms (LeRobot's bimanual setup); "left" lifts a
small bar and hands it to "right", which places it on a target.

The arms stand 60 cm apart facing +x: "left" at (-0.25, +0.3, 0) m, "right" at (-0.25,
-0.3, 0) m. The bar (2.5 x 12 x 2.5 cm, 8 g) starts lying across "left"'s reach, 20 cm in
front of its shoulder; the target (a flat marker) is in front of "right". Each arm grasps
its own end of the bar, 4 cm from the centre.

An SO-100 has five joints and one moving jaw that closes along the direction the arm
points to, so a bar is grasped only while it lies across that direction. The handover
therefore happens between the two bases, 7 cm up, where both arms point across the bar
at once (the bar about 8 degrees off x, so that two grasps 8 cm apart both lie across it).

The scripted solution works in pd_joint_pos (the task's default mode) with its own IK
(ik_step: the jaws pointing down, the actual tcp error integrated into the joint
command): 63 of 64 on seeds 0-63 (64 envs, default isolation; docs/tasks.md). As it
emits joint positions, `robosim demos generate` (ee modes only) does not run it. Measured
on the way: in pd_ee_delta_pos the jaws' squeeze tips the wrist (a delta controller does
not hold joint positions) and no grasp held; closing harder than CLOSE (-0.6, -0.7) or
softer (-0.45, -0.4) dropped more bars (16 seeds, an earlier version of the solution: 2,
0, 3 and 0 successes against 9 at -0.5).

Success: the bar's centre within 3 cm of the target in xy, resting on the ground (centre
below 1.75 cm), and both arms at rest (|arm qvel| < 0.2 rad/s).

Dense reward (in [-4, 0]; normalized_dense = dense / 4): left reaching (1 - tanh(5 *
tcp-to-its-end distance)) + bar height fraction (up to 8 cm) + right reaching (1 -
tanh(5 * tcp-to-its-end distance)) + (1 - tanh(5 * bar-to-target xy distance)) - 4,
exactly 0 on the success step."""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import quat_to_matrix
from robosim.envs import Task, register_task
from robosim.envs.robots import RobotSlot
from robosim.envs.solutions import PhasePolicy
from robosim.sim import Box, RigidObject
from robosim_tasks.common import GoalPointMixin
from robosim_tasks.two_arm_common import HandoverScoring, bar_axis, build_bar, place_bar

BASES = {"left": (-0.25, 0.3, 0.0), "right": (-0.25, -0.3, 0.0)}
SHOULDER_X = 0.045       # m: an SO-100's shoulder (pan) axis stands this far in front of its base
REACH = 0.2              # m: the tcp's horizontal distance from the shoulder at the pick and the place
BAR_HALF = (0.0125, 0.06, 0.0125)   # m, long side along the bar's own y
GRIP_OFFSET = 0.04       # m from the centre, along the bar, where each arm grasps
GRIP_HEIGHT = 0.005      # m: the tcp grasps this far above the bar's axis (the jaw tips reach 1-2 cm below it)
GOAL_RADIUS = 0.03       # m, xy
HANDOVER_Z = 0.07       # m, the tcps' height at the handover
# both shoulders point across the bar: its axis is off x by asin(grasp distance / shoulder distance)
_SPAN = BASES["left"][1] - BASES["right"][1]
_TURN = math.asin(2 * GRIP_OFFSET / _SPAN)
_ACROSS = _SPAN / 2 * math.cos(_TURN)   # each tcp's horizontal distance from its shoulder at the handover


def shoulder(slot: str) -> tuple[float, float]:
    """(x, y) m, env frame: the default base's pan axis of `slot`."""
    x, y, _ = BASES[slot]
    return x + SHOULDER_X, y


def handover_points() -> dict[str, tuple[float, float, float]]:
    """{slot: (x, y, z)} m, env frame: where each tcp holds the bar at the handover (each
    arm points at the other across the bar, the grasps 2 * GRIP_OFFSET apart along it)."""
    (lx, ly), (rx, ry) = shoulder("left"), shoulder("right")
    nx, ny = math.sin(_TURN), -math.cos(_TURN)   # from the left shoulder toward the right one, across the bar
    return {"left": (lx + _ACROSS * nx, ly + _ACROSS * ny, HANDOVER_Z),
            "right": (rx - _ACROSS * nx, ry - _ACROSS * ny, HANDOVER_Z)}


@register_task("SO100Handover-v1")
class SO100HandoverTask(HandoverScoring, GoalPointMixin, Task):
    instruction = "Pick up the bar with the left arm, hand it to the right arm and place it on the target."
    robot_slots = {slot: RobotSlot("so100", base_position=base) for slot, base in BASES.items()}
    # each arm's tcp way points: the pick (or place) in front of it, the handover between
    # the bases, and the moves above them
    requires = {"left": Requirements(min_arm_dof=5, gripper=True, min_gripper_opening=0.05,
                                     workspace=((-0.27, -0.02, 0.015), (0.03, 0.33, 0.15))),
                "right": Requirements(min_arm_dof=5, gripper=True, min_gripper_opening=0.05,
                                      workspace=((-0.27, -0.33, 0.015), (0.03, 0.02, 0.15)))}
    default_control_mode = "pd_joint_pos"
    scripted_success = {"so100": 0.98}   # 63/64 (docs/tasks.md)
    max_episode_steps = 250
    max_dense_reward = 4.0
    held, held_half_height, lift_for_full_reward, goal_radius = "bar", BAR_HALF[2], 0.08, GOAL_RADIUS
    human_camera = {"target_position": (-0.1, 0.0, 0.05), "distance": 0.9, "yaw": 90.0, "pitch": -35.0}

    def build_scene(self, sim, rng):
        self.bar = build_bar(sim, "bar", BAR_HALF, [0.2, 0.4, 0.9, 1.0], density=100.0)
        self.goal_marker = sim.add_object("goal", RigidObject(
            [Box((GOAL_RADIUS, GOAL_RADIUS, 0.001), color=[0.1, 0.8, 0.2, 0.6], collision=False)], body="kinematic"))
        self.goal_pos = torch.zeros(sim.num_envs, 3, device=self.device)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        (lx, ly), (rx, ry) = shoulder("left"), shoulder("right")
        # the bar across left's reach, its +y end (left's) REACH in front of the shoulder
        x = (lx + REACH - 0.02, lx + REACH + 0.02)
        y = (ly - GRIP_OFFSET - 0.01, ly - GRIP_OFFSET + 0.01)
        pose = place_bar(rng, BAR_HALF, x, y, 0.1)
        self.bar.set_pose(pose, env_idx)
        self.bar.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)
        goal_xy = torch.cat([rng.uniform(rx + REACH - 0.02, rx + REACH + 0.02, (1,)),
                             rng.uniform(ry - GRIP_OFFSET - 0.01, ry - GRIP_OFFSET + 0.01, (1,))], dim=1)
        self.set_goal(torch.cat([goal_xy, torch.full_like(goal_xy[:, :1], 0.001)], dim=1), env_idx)

    def grasp_points(self, pose: torch.Tensor) -> dict[str, torch.Tensor]:
        """{slot: (N, 3)}: left grasps the bar's own +y end, right its -y end (env frame, m)."""
        axis = bar_axis(pose)
        above = pose.new_tensor([0.0, 0.0, GRIP_HEIGHT])
        return {"left": pose[:, :3] + GRIP_OFFSET * axis + above, "right": pose[:, :3] - GRIP_OFFSET * axis + above}

    def solution_policy(self):
        return SO100HandoverPolicy(self)


# the handover's phases, in order
(L_ABOVE, L_DOWN, L_CLOSE, L_LIFT, CARRY, R_ABOVE, R_DOWN, R_CLOSE, L_OPEN, R_LIFT, R_SWING, PLACE, R_OPEN,
 R_RISE) = range(14)
SWING_STEP = 0.02   # rad: the most a joint turns per control step while swinging


class SO100HandoverPolicy(PhasePolicy):
    """pd_joint_pos. Left: above its end, down, close (6 steps, gently: CLOSE), lift (back
    above its end to try again when the bar did not come up), carry to its handover point
    while right holds its start; right: above its end, down, close (6 steps); left opens
    (5 steps) and backs off up; right lifts, swings back in joint space to a pose above
    the target, carries the bar's centre over it, lowers it, opens (5 steps) and rises.
    Outside the swing each step moves each arm's commanded joints by one ik_step (the
    jaws pointing down; their yaw follows the arm's heading)."""

    def __init__(self, task):
        super().__init__(task)
        # where each tcp was sent when its jaws began to close: held while they close (the
        # bar's own grasp point would move the target with every push the jaws give it)
        self.hold = {slot: torch.zeros(self.ctx.num_envs, 3, device=self.ctx.device) for slot in self.robots}
        # each arm's commanded joint positions (pd_joint_pos holds them: a grasp's squeeze
        # cannot push the wrist away, as it would through a delta controller)
        self.command = {slot: robot.qpos[:, :robot.arm_dof].clone() for slot, robot in self.robots.items()}
        self.start = {slot: robot.tcp_pose()[:, :3] for slot, robot in self.robots.items()}   # where each tcp began
        self.swing_to = self.command["right"].clone()

    def act(self):
        task, phase = self.task, self.phase
        fresh = self.ctx.elapsed_steps == 0
        for slot, robot in self.robots.items():
            self.command[slot][fresh] = robot.qpos[fresh, :robot.arm_dof]
            self.start[slot][fresh] = robot.tcp_pose()[fresh, :3]
        pose = task.bar.pose()
        points = task.grasp_points(pose)
        left, right = self.robots["left"], self.robots["right"]
        lt, rt = left.tcp_pose()[:, :3], right.tcp_pose()[:, :3]
        up = pose.new_tensor([0.0, 0.0, 0.05])
        handover = {slot: pose.new_tensor(p).expand_as(lt) for slot, p in handover_points().items()}
        lifted = torch.cat([points["left"][:, :2], torch.full_like(lt[:, :1], HANDOVER_Z)], dim=1)
        back_off = handover["left"] + pose.new_tensor([0.0, 0.06, 0.08])
        # carry so that the bar's centre (not the tcp) comes over the goal (keep the grasp
        # offset), the tcp down to its grasp height (a bar tilted in the jaws touches down
        # before its centre is low: aiming the centre there would push the arm into the ground)
        carry = torch.cat([rt[:, :2] + task.goal_pos[:, :2] - pose[:, :2],
                           torch.full_like(rt[:, :1], BAR_HALF[2] + GRIP_HEIGHT + 0.003)], dim=1)

        def pick(choices, default):
            """Per env, the entry of `choices` {phase: (N, 3)} for its phase."""
            out = default
            for p, value in choices.items():
                out = torch.where((phase == p).unsqueeze(1), value, out)
            return out

        l_target = pick({L_ABOVE: points["left"] + up, L_DOWN: points["left"], L_CLOSE: self.hold["left"],
                         L_LIFT: lifted,
                         CARRY: handover["left"], R_ABOVE: handover["left"], R_DOWN: handover["left"],
                         R_CLOSE: handover["left"]}, torch.where((phase > L_OPEN).unsqueeze(1), back_off, lt))
        r_target = pick({R_ABOVE: points["right"] + up, R_DOWN: points["right"], R_CLOSE: self.hold["right"],
                         R_LIFT: rt + up,
                         PLACE: carry, R_OPEN: rt, R_RISE: task.goal_pos + 2 * up},
                        torch.where((phase < R_ABOVE).unsqueeze(1), self.start["right"], rt))
        r_target = torch.where((phase == PLACE).unsqueeze(1) & (carry - rt)[:, :2].norm(dim=1, keepdim=True).gt(0.006),
                               carry + up, r_target)
        l_err, r_err = (l_target - lt).norm(dim=1), (r_target - rt).norm(dim=1)
        timer = self.timer
        nxt = phase.clone()
        nxt[(phase == L_ABOVE) & (l_err < 0.01)] = L_DOWN
        nxt[(phase == L_DOWN) & (l_err < 0.006)] = L_CLOSE
        nxt[(phase == L_CLOSE) & (timer >= 6)] = L_LIFT
        held = pose[:, 2] > BAR_HALF[2] + 0.02
        nxt[(phase == L_LIFT) & (l_err < 0.015)] = CARRY
        nxt[(phase == L_LIFT) & (l_err < 0.015) & ~held] = L_ABOVE   # the jaws missed it: open and try again
        nxt[(phase == CARRY) & (l_err < 0.03) & (timer >= 10)] = R_ABOVE
        nxt[(phase == R_ABOVE) & ((r_err < 0.01) | ((timer >= 30) & (r_err < 0.03)))] = R_DOWN
        nxt[(phase == R_DOWN) & ((r_err < 0.006) | ((timer >= 30) & (r_err < 0.012)))] = R_CLOSE
        nxt[(phase == R_CLOSE) & (timer >= 6)] = L_OPEN
        nxt[(phase == L_OPEN) & (timer >= 5)] = R_LIFT
        nxt[(phase == R_LIFT) & (timer >= 4)] = R_SWING
        swung = (self.command["right"] - self.swing_to).abs().amax(dim=1) < 1e-3
        nxt[(phase == R_SWING) & swung & (timer >= 10)] = PLACE
        near = (pose[:, :2] - task.goal_pos[:, :2]).norm(dim=1) < 0.01
        lowered = near & (rt[:, 2] < BAR_HALF[2] + GRIP_HEIGHT + 0.01)
        nxt[(phase == PLACE) & ((r_err < 0.006) | lowered)] = R_OPEN
        nxt[(phase == R_OPEN) & (timer >= 5)] = R_RISE
        for slot, closing in (("left", L_CLOSE), ("right", R_CLOSE)):
            start = (nxt == closing) & (phase != closing)
            self.hold[slot][start] = points[slot][start]
        l_closed = (phase >= L_CLOSE) & (phase < L_OPEN)
        r_closed = (phase >= R_CLOSE) & (phase < R_OPEN)
        swinging = phase == R_SWING
        self.command["left"] = ik_step(left, self.command["left"], l_target)
        self.command["right"] = torch.where(swinging.unsqueeze(1), self.command["right"],
                                            ik_step(right, self.command["right"], r_target))
        # right swings back in joint space to a pose above the target found from its rest
        # pose (carried by IK from the handover, it stays on a folded branch whose wrist
        # runs into its limit near the target)
        start = swinging & (self.timer == 0)
        if start.any():
            above = torch.cat([task.goal_pos[:, :1], task.goal_pos[:, 1:2] + GRIP_OFFSET,
                               torch.full_like(lt[:, :1], BAR_HALF[2] + GRIP_HEIGHT + 0.04)], dim=1)
            self.swing_to[start] = ik_solve(right, above)[start]
        step = self.swing_to - self.command["right"]   # along a straight line in joint space: all arrive together
        step = step * torch.clamp(SWING_STEP / step.abs().amax(dim=1, keepdim=True).clamp(min=1e-9), max=1.0)
        self.command["right"] = torch.where(swinging.unsqueeze(1), self.command["right"] + step, self.command["right"])
        return torch.cat([self.command["left"], torch.where(l_closed, CLOSE, 1.0).unsqueeze(1),
                          self.command["right"], torch.where(r_closed, CLOSE, 1.0).unsqueeze(1)], dim=1), nxt


# the jaws' command while closed: a 2.5 cm bar stops them at about -0.65; a harder
# squeeze (-1) rolls the bar out between the one moving jaw and the fixed one
CLOSE = -0.5
IK_STEP = 0.02       # m: the most the commanded tcp moves per control step
IK_DAMPING = 0.03
# how much pointing the jaws straight down counts against reaching the target (m per unit
# of the approach axis' horizontal part): less than 1 so that a wrist at its limit tilts
# the jaws a little instead of throwing the solution about
TILT_WEIGHT = 0.3


def ik_step(robot, q: torch.Tensor, target: torch.Tensor, from_command: bool = False) -> torch.Tensor:
    """float32 (N, arm_dof) commanded joint positions one damped-least-squares step from
    `q` (N, arm_dof, the last command) toward the tcp at `target` (N, 3) (env frame, m; at
    most IK_STEP a step) with the jaws pointing down: five joints, five conditions (the
    jaws' yaw is then the arm's heading). The error is the robot's actual one, so the
    command integrates it: what gravity pulls the arm short of its command is made up.
    The Jacobian is taken at `q` by finite differences of the robot's FK."""
    n, dof = q.shape
    eps = 1e-4
    probes = q.unsqueeze(0).repeat(dof + 1, 1, 1)
    probes[1:, :, :] += eps * torch.eye(dof, device=q.device).unsqueeze(1)
    rest = robot.qpos[:, dof:]
    pose = robot.tcp_pose(torch.cat([probes.reshape(-1, dof), rest.repeat(dof + 1, 1)], dim=1)).reshape(dof + 1, n, 7)
    jac = ((_features(pose[1:]) - _features(pose[:1])) / eps).permute(1, 2, 0)   # (N, 5, dof)
    actual = _features(pose[:1])[0] if from_command else _features(robot.tcp_pose().unsqueeze(0))[0]
    move = target - actual[:, :3]
    move = move * torch.clamp(IK_STEP / move.norm(dim=1, keepdim=True).clamp(min=1e-9), max=1.0)
    error = torch.cat([move, -actual[:, 3:]], dim=1)
    limits = robot.arm.qlimits.to(q.device)
    jjt = jac @ jac.transpose(1, 2) + IK_DAMPING ** 2 * torch.eye(5, device=q.device)
    step = (jac.transpose(1, 2) @ torch.linalg.solve(jjt, error.unsqueeze(2))).squeeze(2)
    return torch.clamp(q + step, limits[:, 0], limits[:, 1])


def ik_solve(robot, target: torch.Tensor, iterations: int = 60) -> torch.Tensor:
    """float32 (N, arm_dof) joint positions (FK only, no physics) that put the tcp at
    `target` (N, 3) with the jaws pointing down, found from the rest pose."""
    q = robot.rest_qpos(len(target))[:, :robot.arm.qlimits.shape[0]].to(target.device)
    for _ in range(iterations):
        q = ik_step(robot, q, target, from_command=True)
    return q


def _features(pose: torch.Tensor) -> torch.Tensor:
    """(K, N, 5): tcp position and TILT_WEIGHT x the horizontal part of the jaws'
    approach axis (the tcp's -y), from tcp poses (K, N, 7)."""
    k, n, _ = pose.shape
    down = -quat_to_matrix(pose[..., 3:].reshape(-1, 4).double()).reshape(k, n, 3, 3)[..., :2, 1].float()
    return torch.cat([pose[..., :3], TILT_WEIGHT * down], dim=2)
