"""A new task in ~50 lines: lift a cube 10 cm off the ground (docs/writing-tasks.md).

Run:   .venv/bin/python examples/custom_task.py [SIM_BACKEND]   (default physx_cpu; physx_cuda on a GPU)
Video: cd examples && ../.venv/bin/robosim eval --import custom_task LiftCube-v1 --video lift.mp4
A third-party package would instead list the class under the `robosim.tasks` entry
point group in its own setup.cfg:
    [options.entry_points]
    robosim.tasks =
        LiftCube-v1 = my_package.lift:LiftCubeTask
"""
from __future__ import annotations

import sys

import torch

import robosim
from robosim.envs.solutions import PickAndPlacePolicy  # the scripted-solution API
from robosim.sim import Box, RigidObject
from robosim_tasks.common import place_on_ground  # helpers of the built-in tasks

HALF = 0.02
LIFT_HEIGHT = 0.1


@robosim.register_task("LiftCube-v1")
class LiftCubeTask(robosim.Task):
    max_episode_steps = 40
    max_dense_reward = 2.0

    def build_scene(self, sim, rng):                  # once, and on every reconfigure
        self.cube = sim.add_object("cube", RigidObject([Box(HALF, color=(0.9, 0.6, 0.1))], pose=(0, 0, HALF)))

    def initialize_episode(self, env_idx, rng):       # only the envs being reset
        super().initialize_episode(env_idx, rng)      # robot at rest (+ small noise)
        pose = place_on_ground(rng, HALF, -0.1, 0.1)
        self.cube.set_pose(pose, env_idx)
        self.cube.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)

    def evaluate(self):
        height = self.cube.pose()[:, 2] - HALF
        fail = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)   # on the env's device
        return {"success": height > LIFT_HEIGHT, "fail": fail, "height": height}

    def dense_reward(self, info):                     # <= 0, and 0 on success: hovering never pays more
        tcp = self.robot.tcp_pose()[:, :3]
        reach = -torch.tanh(5 * (self.cube.pose()[:, :3] - tcp).norm(dim=1))
        lift = torch.clamp(info["height"] / LIFT_HEIGHT, 0, 1) - 1
        return torch.where(info["success"], torch.zeros_like(reach), reach + lift)

    def task_observations(self, info):
        return {"cube_pose": self.cube.pose()}

    def solution_policy(self):
        return LiftPolicy(self)


class LiftPolicy(PickAndPlacePolicy):
    def cube(self):
        return self.task.cube

    def place_target(self):
        start = self.task.cube.pose()[:, :3].clone()
        start[:, 2] = HALF + LIFT_HEIGHT + 0.03
        return start


def main(sim_backend: str = "physx_cpu") -> None:
    env = robosim.make("LiftCube-v1", num_envs=8, control_mode="pd_ee_delta_pose", sim_backend=sim_backend)
    obs, info = env.reset(seed=0)
    policy = env.task.solution_policy()
    solved = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
    for _ in range(env.max_episode_steps):
        obs, reward, terminated, truncated, info = env.step(policy())
        solved |= info["success"]
    print(f"obs {tuple(obs.shape)}, lifted in {int(solved.sum())}/{env.num_envs} envs")
    env.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
