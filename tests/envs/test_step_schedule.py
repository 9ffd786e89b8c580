"""The order in which BaseEnv calls a task's hooks and its step subscribers, pinned with a
task that records every call: construction, reset, partial reset and two steps; the
before/after_control_step hooks relative to the physics, interval events, the fault
monitor and elapsed_steps; and a task without the hooks never has them called."""
from __future__ import annotations

import torch

import robosim
from robosim.envs.faults import RUNAWAY
from robosim.sim import Box, RigidObject

CALLS: list[tuple] = []
EVENT_LOG: list = []   # the env's randomization log (a task sees its context, not the env)


class RecordingTask(robosim.Task):
    """A cube on the floor; every hook appends (name, details) to CALLS."""

    max_episode_steps = 10

    def build_scene(self, sim, rng):
        CALLS.append(("build_scene",))
        self.cube = sim.add_object("cube", RigidObject([Box(0.02)], pose=(0.1, 0.0, 0.02)))

    def initialize_episode(self, env_idx, rng):
        CALLS.append(("initialize_episode", env_idx.tolist()))
        super().initialize_episode(env_idx, rng)

    def before_control_step(self, action):
        pushes = len(EVENT_LOG[0].of("push"))
        CALLS.append(("before_control_step", self.ctx.elapsed_steps.tolist(), pushes,
                      None if action is None else action.tolist()))
        if self.runaway:     # a speed far above the fault monitor's limit, written before the physics
            self.cube.set_velocity(torch.tensor([[500.0, 0, 0, 0, 0, 0]] * self.num_envs))

    def after_control_step(self):
        speed = float(self.cube.velocity()[:, :3].norm(dim=1).max())
        CALLS.append(("after_control_step", self.ctx.elapsed_steps.tolist(), speed < 50.0))

    def evaluate(self):
        CALLS.append(("evaluate", self.ctx.elapsed_steps.tolist()))
        false = torch.zeros(self.num_envs, dtype=torch.bool)
        return {"success": false, "fail": false}

    def dense_reward(self, info):
        CALLS.append(("dense_reward",))
        return torch.zeros(self.num_envs)

    def task_observations(self, info):
        CALLS.append(("task_observations",))
        return {}


# period one control step (0.05 s at 20 Hz): due from the second step of an episode on
PUSH = {"push": {"mode": "interval", "target": "object:cube", "property": "velocity", "dist": [0.0] * 6,
                 "period_s": 0.05}}


def test_the_whole_call_schedule():
    CALLS.clear()
    env = robosim.make(RecordingTask, num_envs=2, control_mode="pd_joint_delta_pos", randomization=PUSH)
    EVENT_LOG[:] = [env.randomization.log]
    env.task.runaway = False
    try:
        # construction: the scene, then one evaluate + obs to infer the observation space
        assert CALLS == [("build_scene",), ("evaluate", [0, 0]), ("task_observations",)]
        CALLS.clear()
        env.reset(seed=0)
        assert CALLS == [("initialize_episode", [0, 1]), ("evaluate", [0, 0]), ("task_observations",)]
        CALLS.clear()
        action = torch.full((2, env.single_action_space.shape[0]), 5.0)   # clipped to the space's high
        env.step(action)
        env.reset(options={"env_idx": [1]})
        CALLS.append(("--",))
        env.task.runaway = True
        info = env.step(None)[4]
        assert info["sim_fault"].tolist() == [RUNAWAY, RUNAWAY]
        high = env.single_action_space.high.tolist()
        assert CALLS == [
            # step 1: nothing due yet (an event fires once elapsed_steps reaches its period)
            ("before_control_step", [0, 0], 0, [high, high]),
            ("after_control_step", [0, 0], True),       # before elapsed_steps += 1
            ("evaluate", [1, 1]), ("task_observations",), ("dense_reward",),
            ("initialize_episode", [1]), ("evaluate", [1, 0]), ("task_observations",),
            ("--",),
            # step 2: env 0's event fired in this step, before the task's hook (env 1 was
            # reset: not due); the task's runaway write is undone by the fault monitor
            # before the task's after hook runs
            ("before_control_step", [1, 0], 1, None),
            ("after_control_step", [1, 0], True),
            ("evaluate", [2, 1]), ("task_observations",), ("dense_reward",),
        ]
    finally:
        env.close()


class NoHooksTask(RecordingTask):
    """Inherits the recording hooks but puts Task's no-op ones back."""

    before_control_step = robosim.Task.before_control_step
    after_control_step = robosim.Task.after_control_step


def test_hooks_a_task_does_not_override_are_not_called():
    assert NoHooksTask.overridden_step_hooks() == (False, False)
    assert RecordingTask.overridden_step_hooks() == (True, True)
    CALLS.clear()
    env = robosim.make(NoHooksTask, num_envs=1, control_mode="pd_joint_delta_pos")
    try:
        env.reset(seed=0)
        CALLS.clear()
        env.step(None)
        assert CALLS == [("evaluate", [1]), ("task_observations",), ("dense_reward",)]
    finally:
        env.close()
