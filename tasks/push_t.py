"""PushT-v1: push a T-shaped block on the ground to a goal pose (position and yaw).

The block has ManiSkill3's PushT proportions (a 20 x 5 cm bar over a 5 x 15 cm stem,
4 cm thick) scaled by 0.75; its frame is its centre of mass (the bar along the body x
axis, the stem along +y). A flat grey T on the ground marks the goal.

Goals are translation-dominant, so a scripted pusher reaches them reliably: the goal
centre lies uniformly in x [-0.02, 0.04], y [-0.08, 0.08] m; the block starts 7-11 cm
from it, behind it along a direction within +-45 deg of +x (pushes go away from the
robot), at a uniform yaw, and the goal's yaw differs from the start's by at most
+-0.3 rad. Task state: the goal (N, 3) [x, y, yaw].

Success: the block's centre within 2.5 cm (xy) of the goal's and its yaw within
0.15 rad of the goal's. Never fails.

Dense reward (in [-3.5, 0]; normalized_dense = dense / 3.5, in [-1, 0]): per step
  -2 * tanh(5 * d)           d: block-goal centre distance (m)
  -|yaw error| / pi          yaw error wrapped to [-pi, pi]
  -0.5 * tanh(5 * r)         r: tcp-block centre distance (m), a reaching hint
and exactly 0 on the success step, so hovering never pays more than succeeding (the
episode ends on success). Sparse: -1 per step, 0 on success.

Task obs (env frame): tee_pose (N, 7), goal_pose (N, 7) [goal centre at the block's
height, goal yaw], tcp_to_tee_pos (N, 3), and the push lane (`PushTTask.push_lane`, a
function of the block's pose and the goal): push_direction (N, 2) unit, tcp_to_lane_start
(N, 2) m, tcp_in_lane (N, 3) m [lateral, along, ahead: `lane_coordinates`],
jaws_yaw_to_push (N, 2) (sin, cos) of twice the yaw from the tcp's x axis to the push
direction. The lane terms let a learner read where the scripted pusher leaves a lane
(thresholds on the tcp's lane coordinates) without deriving them.

Scripted solution: a pusher with the gripper closed that decides from the current
state alone (no plan kept between steps, so an imitator sees one label per state): from
behind the block's farthest point on the line from the goal through its centre, shifted
sideways in proportion to the yaw error (an off-centre push turns the block), it pushes
at 2 cm toward the goal; out of that lane it lifts, travels above the lane's start and
goes down. Within 1.5 cm of the goal with the yaw still off, the lane pushes one end of
the bar across it instead.
"""
from __future__ import annotations

import functools
import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import quat_yaw, wrap_angle, yaw_quat
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim.sim import ActorView, Box, Material, RigidObject

SCALE = 0.75
BAR_HALF = (0.1 * SCALE, 0.025 * SCALE)        # bar half extents x, y (m)
STEM_HALF = (0.025 * SCALE, 0.075 * SCALE)     # stem half extents x, y (m)
HALF_THICKNESS = 0.02
COM_Y = 0.0375 * SCALE                          # centre of mass above the bar's centre (+y), m
TEE_MASS = 0.8                                  # kg (ManiSkill3's)
GOAL_LOW, GOAL_HIGH = (-0.02, -0.08), (0.04, 0.08)
PUSH_LENGTH = (0.07, 0.11)                      # start-to-goal distance (m)
MAX_DIRECTION = math.pi / 4                     # push direction within +-this of +x (rad)
MAX_YAW_OFFSET = 0.3                            # goal yaw - start yaw (rad)
POSITION_THRESHOLD = 0.025
YAW_THRESHOLD = 0.15
END_OFFSET = 0.8 * BAR_HALF[0]                  # scripted turning push: this far along the bar (m)
FINGER_HALF = 0.01                              # scripted pusher: half thickness of the closed jaws (m)
LANE_MARGIN = 0.03                              # the lane starts this far behind the contact (m)
SIDE_GAIN = 0.12                                # m of sideways lane offset per rad of yaw error
MAX_SIDE = 0.04                                 # m
TURN_RADIUS = 0.015                             # turning pushes within this of the goal (m)


def tee_shapes(color, collision: bool = True, half_thickness: float = HALF_THICKNESS, z: float = 0.0) -> list:
    """The T's two boxes in its centre-of-mass frame (m)."""
    return [
        Box((BAR_HALF[0], BAR_HALF[1], half_thickness), pose=(0.0, -COM_Y, z), color=color, collision=collision),
        Box((STEM_HALF[0], STEM_HALF[1], half_thickness), pose=(0.0, BAR_HALF[1] + STEM_HALF[1] - COM_Y, z),
            color=color, collision=collision),
    ]


@register_task("PushT-v1")
class PushTTask(Task):
    instruction = "Push the T-shaped block to the goal position and orientation."
    max_episode_steps = 150
    max_dense_reward = 3.5
    # 6 joints: the closed jaws turn across the push; workspace: the pusher behind the block start to the
    # turning push at the goal
    requires = Requirements(min_arm_dof=6, workspace=((-0.23, -0.2, 0.02), (0.12, 0.2, 0.1)))
    scripted_success = {"panda": 1.0, "xarm7": 0.98}   # docs/robots.md
    # steeply from above, facing the robot: block, goal T and pusher
    human_camera = dict(target_position=(0.0, 0.0, 0.0), distance=0.75, yaw=200.0, pitch=-60.0)

    def build_scene(self, sim, rng):
        self.tee: ActorView = sim.add_object("tee", RigidObject(
            tee_shapes((0.76, 0.08, 0.09, 1.0)), pose=(0.0, 0.0, HALF_THICKNESS), mass=TEE_MASS,
            material=Material(1.0, 1.0, 0.0)))
        self.goal_marker: ActorView = sim.add_object("goal_tee", RigidObject(
            tee_shapes((0.5, 0.5, 0.5, 1.0), collision=False, half_thickness=5e-4), body="kinematic",
            pose=(0.0, 0.0, 5e-4)))
        self.goal = torch.zeros(sim.num_envs, 3, device=self.device)   # x, y (m), yaw (rad)

    def set_goal(self, goal: torch.Tensor, env_idx: torch.Tensor) -> None:
        """goal (M, 3): x, y (env frame, m), yaw (rad) for the envs env_idx."""
        self.goal[env_idx] = goal
        z = goal.new_full((len(env_idx), 1), 5e-4)
        self.goal_marker.set_pose(torch.cat([goal[:, :2], z, yaw_quat(goal[:, 2])], dim=1), env_idx)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        low, high = torch.tensor(GOAL_LOW, device=rng.device), torch.tensor(GOAL_HIGH, device=rng.device)
        goal_xy = low + (high - low) * rng.uniform(0.0, 1.0, (2,))
        length = rng.uniform(*PUSH_LENGTH)
        direction = rng.uniform(-MAX_DIRECTION, MAX_DIRECTION)
        start_xy = goal_xy - length.unsqueeze(1) * torch.stack([direction.cos(), direction.sin()], dim=1)
        start_yaw = rng.uniform(-math.pi, math.pi)
        goal_yaw = wrap_angle(start_yaw + rng.uniform(-MAX_YAW_OFFSET, MAX_YAW_OFFSET))
        z = start_xy.new_full((len(env_idx), 1), HALF_THICKNESS)
        pose = torch.cat([start_xy, z, yaw_quat(start_yaw)], dim=1)
        self.tee.set_pose(pose, env_idx)
        self.tee.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)
        self.set_goal(torch.cat([goal_xy, goal_yaw.unsqueeze(1)], dim=1), env_idx)

    def get_task_state(self):
        return self.goal.clone()

    def set_task_state(self, state, env_idx):
        # the marker's pose is physics state, restored with it: rewriting it from the
        # goal would differ from the saved pose in the last bit
        self.goal[env_idx] = state.to(self.goal)

    def evaluate(self):
        pose = self.tee.pose()
        dist = (pose[:, :2] - self.goal[:, :2]).norm(dim=1)
        yaw_err = wrap_angle(quat_yaw(pose[:, 3:]) - self.goal[:, 2]).abs()
        tcp = self.robot.tcp_pose()[:, :3]
        return {
            "success": (dist <= POSITION_THRESHOLD) & (yaw_err <= YAW_THRESHOLD),
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "tee_to_goal_dist": dist,
            "tee_to_goal_yaw": yaw_err,
            "tcp_to_tee_dist": (pose[:, :3] - tcp).norm(dim=1),
        }

    def dense_reward(self, info):
        reward = (-2.0 * torch.tanh(5 * info["tee_to_goal_dist"]) - info["tee_to_goal_yaw"] / math.pi
                  - 0.5 * torch.tanh(5 * info["tcp_to_tee_dist"]))
        return torch.where(info["success"], torch.zeros_like(reward), reward)

    def task_observations(self, info):
        pose = self.tee.pose()
        tcp_pose = self.robot.tcp_pose()
        tcp = tcp_pose[:, :3]
        goal_pose = torch.cat([self.goal[:, :2], self.goal.new_full((self.num_envs, 1), HALF_THICKNESS),
                               yaw_quat(self.goal[:, 2])], dim=1)
        start, d, contact = self.push_lane()
        tcp_yaw = quat_yaw(tcp_pose[:, 3:])
        jaws_turn = 2 * (torch.atan2(d[:, 1], d[:, 0]) - tcp_yaw)   # the closed jaws look the same each half turn
        return {"tee_pose": pose, "goal_pose": goal_pose, "tcp_to_tee_pos": pose[:, :3] - tcp,
                "push_direction": d, "tcp_to_lane_start": start - tcp[:, :2],
                "tcp_in_lane": torch.stack(lane_coordinates(tcp[:, :2], start, d, contact), dim=1),
                "jaws_yaw_to_push": torch.stack([jaws_turn.sin(), jaws_turn.cos()], dim=1)}

    def push_lane(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The scripted pusher's lane, from the block's pose and the goal alone: (S (N, 2)
        its start point, d (N, 2) the unit push direction, contact (N,) the contact's
        coordinate along d, which the tcp stays behind); env frame, m. Translating (the
        default): d from the block's centre toward the goal's, S behind the block's
        farthest point along -d, shifted sideways by the yaw error; turning (centre within
        TURN_RADIUS of the goal, yaw error > half the threshold): push one end of the bar
        across it (the end whose start is nearer the robot)."""
        pose = self.tee.pose()
        com, goal = pose[:, :2], self.goal[:, :2]
        yaw = quat_yaw(pose[:, 3:])
        yaw_err = wrap_angle(self.goal[:, 2] - yaw)
        err = goal - com
        dist = err.norm(dim=1, keepdim=True)
        d = err / dist.clamp(min=1e-6)
        normal = torch.stack([-d[:, 1], d[:, 0]], dim=1)
        # pushing on the +normal side along d turns the block clockwise (torque = r x F)
        side = torch.clamp(-SIDE_GAIN * yaw_err, -MAX_SIDE, MAX_SIDE)
        reach = support(yaw, -d)
        behind = com - d * (reach + FINGER_HALF + LANE_MARGIN).unsqueeze(1) + normal * side.unsqueeze(1)
        contact = (com * d).sum(dim=1)            # translating: the tcp stays behind the centre
        # turning push at the bar's end e (+-1 along body x) along s * body y, s = e * sign:
        # torque = (e END bx) x (s by) = sign; the pusher meets the bar's bottom (s > 0) or
        # top (s < 0) edge
        bx = torch.stack([yaw.cos(), yaw.sin()], dim=1)
        by = torch.stack([-yaw.sin(), yaw.cos()], dim=1)
        sign = torch.where(yaw_err >= 0, 1.0, -1.0).unsqueeze(1)
        options = []
        for e in (1.0, -1.0):
            s_dir = e * sign
            edge = torch.where(s_dir > 0, -COM_Y - BAR_HALF[1], -COM_Y + BAR_HALF[1])
            touch = com + bx * e * END_OFFSET + by * edge
            options.append((touch - s_dir * by * (FINGER_HALF + LANE_MARGIN), s_dir * by, touch))
        first = options[0][0][:, :1] <= options[1][0][:, :1]      # the start nearer the robot
        turn_start, turn_dir, touch = (torch.where(first, a, b) for a, b in zip(options[0], options[1]))
        turn = (dist < TURN_RADIUS) & (yaw_err.abs() > YAW_THRESHOLD * 0.5).unsqueeze(1)
        start = torch.where(turn, turn_start, behind)
        d = torch.where(turn, turn_dir, d)
        contact = torch.where(turn.squeeze(1), (touch * turn_dir).sum(dim=1) - FINGER_HALF, contact)
        return start, d, contact

    def solution_policy(self):
        return PushTPolicy(self)


class PushTPolicy(PhasePolicy):
    """A pusher that decides from the current state alone (see the module docstring):
    the same block pose, goal and tcp give the same action, so an imitator sees one label
    per state. Each step it takes the task's lane (PushTTask.push_lane: a start point S
    behind the block at pushing height and a direction d). Then: low (tcp below
    `push_z` + 1 cm) and in the lane (within 2 * `lane` m of the line through S along d,
    at most `lane` m behind S and at most `lane` m past the contact) -> push (a carrot
    `carrot` m ahead along d, steering back to the lane); else above S (within `lane` m)
    -> down to S; else below `travel_z` - 2 cm -> straight up to `travel_z`; else -> over
    S. `phase` reports which: 0 over S, 1 down, 2 push, 3 up (diagnostic only; nothing reads it back)."""

    travel_z = 0.1         # m, tcp height between pushes
    push_z = 0.02          # m, tcp height while pushing
    carrot = 0.015         # m ahead of the tcp while pushing
    lane = 0.015           # m, lateral tolerance of the lane and of "above S"

    def act(self):
        tcp_pose = self.robot.tcp_pose()
        tcp = tcp_pose[:, :3]
        start, d, contact = self.task.push_lane()
        normal = torch.stack([-d[:, 1], d[:, 0]], dim=1)
        lateral, along, ahead = lane_coordinates(tcp[:, :2], start, d, contact)
        low = tcp[:, 2] < self.push_z + 0.01
        # pushing, the lane is twice as wide: it moves with the block and the yaw error
        in_lane = (lateral.abs() < 2 * self.lane) & (along > -self.lane) & (ahead < self.lane)
        over_start = (tcp[:, :2] - start).norm(dim=1) < self.lane
        pushing = low & in_lane
        step = self.carrot * d - torch.clamp(lateral, -self.carrot, self.carrot).unsqueeze(1) * normal
        column = tcp.new_full((len(tcp), 1), 1.0)
        push = torch.cat([tcp[:, :2] + step, column * self.push_z], dim=1)
        down = torch.cat([start, column * self.push_z], dim=1)
        up = torch.cat([tcp[:, :2], column * self.travel_z], dim=1)
        over = torch.cat([start, column * self.travel_z], dim=1)
        rising = (tcp[:, 2] < self.travel_z - 0.02) & ~in_lane & ~over_start
        phase = torch.where(pushing, 2, torch.where(over_start, 1, torch.where(rising, 3, 0)))
        targets = torch.stack([over, down, push, up])                     # (4, N, 3) by phase
        target = targets.gather(0, phase.view(1, -1, 1).expand(1, -1, 3)).squeeze(0)
        # the closed jaws across d, the smallest turn from the wrist's current yaw (they look
        # the same every half turn), so a turn once begun is continued whichever way it began
        tcp_yaw = quat_yaw(tcp_pose[:, 3:].double())
        yaw = tcp_yaw + wrap_angle(torch.atan2(d[:, 1], d[:, 0]).double() - tcp_yaw, math.pi)
        rotation = grasp_rotation(yaw, symmetry=2 * math.pi)
        return ee_action(self.robot, target, rotation, -tcp.new_ones(len(tcp))), phase


def lane_coordinates(tcp_xy: torch.Tensor, start: torch.Tensor, d: torch.Tensor,
                     contact: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The tcp's place in a push lane (PushTTask.push_lane), each (N,) m: lateral (its
    offset from the line through the start S along d, + on d's left), along (how far past
    S along d) and ahead (how far past the contact along d)."""
    offset = tcp_xy - start
    normal = torch.stack([-d[:, 1], d[:, 0]], dim=1)
    return (offset * normal).sum(dim=1), (offset * d).sum(dim=1), (tcp_xy * d).sum(dim=1) - contact


def support(yaw: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    """(N,) how far the T of yaw (N,) rad reaches from its centre along direction (N, 2)
    (unit, env frame), m: the largest projection of its eight corners."""
    corners = _corners(direction.dtype, direction.device)
    c, s = yaw.cos().unsqueeze(1), yaw.sin().unsqueeze(1)
    local_x = direction[:, :1] * c + direction[:, 1:] * s        # the direction in the body frame
    local_y = -direction[:, :1] * s + direction[:, 1:] * c
    return (corners[:, 0] * local_x + corners[:, 1] * local_y).amax(dim=1)


@functools.lru_cache(maxsize=8)
def _corners(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(8, 2) the T's corners in its centre-of-mass frame (m): the bar's four, then the stem's."""
    return torch.tensor([(sx * BAR_HALF[0], -COM_Y + sy * BAR_HALF[1]) for sx in (-1, 1) for sy in (-1, 1)]
                        + [(sx * STEM_HALF[0], BAR_HALF[1] + STEM_HALF[1] - COM_Y + sy * STEM_HALF[1])
                           for sx in (-1, 1) for sy in (-1, 1)], dtype=dtype, device=device)
