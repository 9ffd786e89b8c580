"""A randomized task (docs/writing-tasks.md, "Randomizing a task").

Per env: a pool of 3 block shapes drawn at build time, one swapped in per episode;
declared events randomize its mass, colour and friction at reset, push it every 1-2 s,
and tint each env's light at build time. Run: .venv/bin/python examples/randomized_task.py
"""
import torch

import robosim
from robosim.sim import Box, RigidObject


@robosim.register_task("ShoveBlock-v1")
class ShoveBlock(robosim.Task):
    randomizes_build = True                          # build_scene draws from rng
    parameters = {"pool_size": 3}
    default_events = {
        "swap": {"mode": "reset", "target": "pool:block", "property": "variant", "dist": {"integers": [0, 3]}},
        "mass": {"mode": "reset", "target": "object:block", "property": "mass", "dist": {"uniform": [0.05, 0.5]}},
        "paint": {"mode": "reset", "target": "object:block", "property": "color",
                  "dist": {"uniform": [[0.1, 0.1, 0.1], [1.0, 1.0, 1.0]]}},
        "grip": {"mode": "reset", "target": "object:block", "property": "friction", "dist": {"uniform": [0.2, 1.0]}},
        "push": {"mode": "interval", "target": "object:block", "property": "velocity", "period_s": {"uniform": [1, 2]},
                 "dist": {"uniform": [[-0.3, -0.3, 0, 0, 0, 0], [0.3, 0.3, 0, 0, 0, 0]]}},
        "light": {"mode": "reconfigure", "target": "light", "property": "color",
                  "dist": {"uniform": [[0.5, 0.5, 0.5], [1.0, 1.0, 1.0]]}},
    }

    def build_scene(self, sim, rng):
        sizes = rng.uniform(0.015, 0.035, (self.pool_size, 3)).tolist()   # (N, K, 3) half extents
        self.block = sim.add_object_pool(
            "block", lambda i, k: RigidObject([Box(tuple(sizes[i][k]))], pose=(0, 0, sizes[i][k][2])),
            size=self.pool_size)
        self.half_z = torch.tensor(sizes)[..., 2]

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        pose = self.block.pose()[env_idx]
        pose[:, :2] = rng.uniform(-0.1, 0.1, (2,))
        pose[:, 2] = self.half_z[env_idx, torch.as_tensor(self.block.active)[env_idx]]
        self.block.set_pose(pose, env_idx)

    def evaluate(self):
        x = self.block.pose()[:, 0]
        return {"success": x > 0.25, "fail": torch.zeros_like(x, dtype=torch.bool)}

    def dense_reward(self, info):
        return torch.clamp(self.block.pose()[:, 0] - 0.25, max=0.0)


if __name__ == "__main__":
    env = robosim.make("ShoveBlock-v1", num_envs=4, seed=0, randomization={"grip": None})   # drop one event
    env.reset(seed=0)
    for _ in range(60):
        env.step(None)
    pushes = env.randomization.log.of("push", env=0)
    print(f"events: {sorted(env.randomization.spec)}; env 0 pushed at steps {[e['step'] for e in pushes]}")
    env.close()
