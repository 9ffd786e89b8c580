"""TwoArmReach-v1: a pair of SO-100 arms (LeRobot's bimanual setup), each moving its tool
centre point to its own goal point.

The arms stand side by side facing +x: "left" at (-0.25, +0.2, 0) m, "right" at (-0.25,
-0.2, 0) m (robosim.envs.robots slots; any arm can take a slot with make(robot=...)).
Each goal is drawn in a 13 x 20 x 20 cm box around the point 25 cm in front of its arm's
base (x -8..+5 cm, y +-10 cm, z 5..25 cm).

Success: both tcps within 3 cm of their goals. Dense reward (= normalized_dense, in
[-1, 0]): -(tanh(5 d_left) + tanh(5 d_right)) / 2, exactly 0 on the success step."""
from __future__ import annotations

import torch

from robosim.envs import Task, register_task
from robosim.envs.robots import RobotSlot
from robosim.envs.solutions import PhasePolicy, ee_action
from robosim_tasks.common import build_goal_marker, identity_poses

DISTANCE_THRESHOLD = 0.03
BASES = {"left": (-0.25, 0.2, 0.0), "right": (-0.25, -0.2, 0.0)}
GOAL_LOW = (-0.08, -0.1, 0.05)     # m, from the point 25 cm in front of the base
GOAL_HIGH = (0.05, 0.1, 0.25)


@register_task("TwoArmReach-v1")
class TwoArmReachTask(Task):
    instruction = "Move each gripper to its own goal position."
    robot_slots = {slot: RobotSlot("so100", base_position=base) for slot, base in BASES.items()}
    max_episode_steps = 50
    default_control_mode = "pd_ee_delta_pos"
    scripted_success = {"so100": 1.0}   # 64/64 (docs/tasks.md)
    human_camera = {"target_position": (0.0, 0.0, 0.1), "distance": 1.0, "yaw": 90.0, "pitch": -30.0}

    def build_scene(self, sim, rng):
        self.goal_markers = {slot: build_goal_marker(sim, f"goal_{slot}", DISTANCE_THRESHOLD / 2,
                                                     [0.1, 0.8, 0.2, 0.6]) for slot in BASES}
        self.goals = torch.zeros(sim.num_envs, len(BASES), 3, device=self.device)   # slot order

    def set_goals(self, goals: torch.Tensor, env_idx: torch.Tensor) -> None:
        """goals (M, 2, 3) env frame, m, in slot order."""
        self.goals[env_idx] = goals
        for k, marker in enumerate(self.goal_markers.values()):
            marker.set_pose(identity_poses(len(env_idx), goals[:, k]), env_idx)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        low, high = self.goals.new_tensor(GOAL_LOW), self.goals.new_tensor(GOAL_HIGH)
        goals = []
        for base in BASES.values():
            centre = self.goals.new_tensor(base) + self.goals.new_tensor([0.25, 0.0, 0.0])
            goals.append(centre + low + (high - low) * rng.uniform(0.0, 1.0, (3,)))
        self.set_goals(torch.stack(goals, dim=1), env_idx)

    def distances(self) -> torch.Tensor:
        """float32 (N, 2): each tcp's distance to its goal (m), slot order."""
        tcps = torch.stack([r.tcp_pose(copy=False)[:, :3] for r in self.ctx.robots.values()], dim=1)
        return torch.linalg.vector_norm(tcps - self.goals, dim=2)

    def evaluate(self):
        d = self.distances()
        return {
            "success": (d < DISTANCE_THRESHOLD).all(dim=1),
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "left_distance": d[:, 0],
            "right_distance": d[:, 1],
        }

    def dense_reward(self, info):
        reward = -(torch.tanh(5 * info["left_distance"]) + torch.tanh(5 * info["right_distance"])) / 2
        return torch.where(info["success"], 0.0, reward)

    def task_observations(self, info):
        return {"goals": self.goals.reshape(self.num_envs, -1).clone()}

    def get_task_state(self):
        return self.goals.reshape(self.num_envs, -1).clone()

    def set_task_state(self, state, env_idx):
        self.set_goals(state.reshape(len(env_idx), len(BASES), 3), env_idx)

    def solution_policy(self):
        return TwoArmReachPolicy(self)


class TwoArmReachPolicy(PhasePolicy):
    """Each arm on a straight line to its goal, gripper open."""

    def act(self):
        goals = self.task.goals
        opened = goals.new_ones(self.ctx.num_envs)
        actions = [ee_action(robot, goals[:, k], None, opened) for k, robot in enumerate(self.robots.values())]
        return torch.cat(actions, dim=1), self.phase
