"""TaskContext (robosim.envs.context) and the Robot readouts tasks read through it:
real PickCube-v1 envs, physx_cpu."""
from __future__ import annotations

import configparser
import dataclasses
import os

import pytest
import torch

import robosim
from robosim.agents import Robot
from robosim.envs.context import TaskContext
from robosim.sim import Box, RigidObject

N = 2


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=N, obs_mode="state")
    yield env
    env.close()


def test_the_context_is_the_envs_own_state(env):
    env.reset(seed=0)
    ctx = env.task.ctx
    assert not hasattr(env.task, "env")
    assert (ctx.num_envs, ctx.device, ctx.reward_mode) == (N, env.device, "dense")
    assert ctx.robot is env.robot and ctx.sim is env.sim and ctx.parts is env.parts
    assert ctx.elapsed_steps is env.elapsed_steps          # updated in place by the env
    env.step(torch.zeros(env.action_space.shape))
    assert ctx.elapsed_steps.tolist() == [1, 1]
    old = env.sim
    env.reset(seed=0, options={"reconfigure": True})
    assert env.sim is not old and ctx.sim is env.sim      # a rebuild is seen, never a stale scene


def test_bad_context_arguments_are_refused_by_name(env):
    steps = torch.zeros(N, dtype=torch.int32)
    parts = lambda: None   # noqa: E731
    cpu = torch.device("cpu")
    with pytest.raises(ValueError, match="num_envs must be a positive int, got 0"):
        TaskContext(0, cpu, steps, env.robot, parts)
    with pytest.raises(TypeError, match="device must be a torch.device, got str"):
        TaskContext(N, "cpu", steps, env.robot, parts)
    wrong = r"elapsed_steps must be an int32 tensor of shape \(2,\) on cpu, got torch.int64 \(2,\) on cpu"
    with pytest.raises(TypeError, match=wrong):
        TaskContext(N, cpu, steps.long(), env.robot, parts)
    with pytest.raises(TypeError, match="robot must be a robosim.agents.Robot, got BaseEnv"):
        TaskContext(N, cpu, steps, env, parts)
    with pytest.raises(TypeError, match="parts must be a callable"):
        TaskContext(N, cpu, steps, env.robot, env.parts)
    with pytest.raises(RuntimeError, match="no scene is built"):
        _ = TaskContext(N, cpu, steps, env.robot, parts).sim
    with pytest.raises(TypeError, match="context must be a robosim.envs.context.TaskContext, got BaseEnv"):
        type(env.task)(env)


class SimInBuild(robosim.Task):
    """Reads ctx.sim inside its first build_scene, where no scene is built yet."""

    def build_scene(self, sim, rng):
        self.ctx.sim.add_object("cube", RigidObject([Box(0.02)], pose=(0, 0, 0.02)))


def test_ctx_sim_inside_the_first_build_is_refused():
    with pytest.raises(RuntimeError, match="build_scene gets it as `sim`"):
        robosim.make(SimInBuild, num_envs=1)


def test_tcp_pose_is_what_the_tasks_read_before_and_follows_every_step_and_write(env):
    env.reset(seed=1)
    robot = env.robot
    # before: tasks computed tcp_pose(robot.view.qpos()); it must be the same bits
    assert torch.equal(robot.tcp_pose(), robot.tcp_pose(robot.view.qpos()))
    # and the tcp link's own pose as PhysX places it (panda: tcp_offset 0 on link "tcp")
    torch.testing.assert_close(robot.tcp_pose()[:, :3], robot.view.link_pose(robot.tcp_link)[:, :3],
                               atol=1e-4, rtol=0)
    before, saved = robot.tcp_pose(), env.get_state()
    env.step(torch.tensor([[1.0, 0, 0, 0, 0, 0, 1.0]] * N))   # +x at full speed
    assert (robot.tcp_pose()[:, 0] > before[:, 0] + 0.005).all()   # a physics step: fresh FK
    env.set_state(saved)                                            # a state write: fresh FK
    assert torch.equal(robot.tcp_pose(), before)


def test_qpos_and_qvel_are_copies_of_the_current_read(env):
    env.reset(seed=2)
    robot = env.robot
    q = robot.qpos
    assert q.shape == (N, robot.dof) and q.dtype == torch.float32
    assert torch.equal(q, robot.view.qpos()) and torch.equal(robot.qvel, torch.zeros(N, robot.dof))
    q += 1.0                                              # yours to modify: the next read is untouched
    assert torch.equal(robot.qpos, robot.view.qpos())
    with pytest.raises(AttributeError):
        robot.qpos = q                                    # read-only


def test_is_static_at_rest_and_not_while_moving(env):
    env.reset(seed=3)
    robot = env.robot
    assert robot.is_static(0.2).tolist() == [True, True]      # reset writes zero velocities
    env.step(torch.tensor([[1.0, 0, -1.0, 0, 0, 0, 1.0]] * N))
    assert robot.is_static(0.2).tolist() == [False, False]   # the arm moves at full speed
    assert robot.is_static(1e3).tolist() == [True, True]
    assert torch.equal(robot.is_static(0.2), robot.arm_speed() < 0.2)
    assert (robot.arm_speed() > 0.2).all() and robot.arm_speed().shape == (N,)


def test_grasp_readouts_along_the_scripted_pick(env):
    env.reset(seed=0)
    task, robot = env.task, env.robot
    assert robot.is_grasping(task.cube).tolist() == [False, False]       # open hand above the cube
    assert robot.is_between_jaws(task.cube.pose()[:, :3], 0.02).tolist() == [False, False]
    policy = task.solution_policy()
    held = torch.zeros(N, dtype=torch.bool)
    for _ in range(env.max_episode_steps):
        _, _, _, _, info = env.step(policy())
        lifted = task.cube.pose()[:, 2] > 0.04                            # 2 cm cube off the table
        grasping = robot.is_grasping(task.cube)
        assert grasping[lifted].all(), "a lifted cube is not grasped"
        assert robot.is_between_jaws(task.cube.pose()[:, :3], 0.02)[lifted].all()
        assert torch.equal(info["is_grasped"], robot.is_between_jaws(task.cube.pose()[:, :3], 0.02))
        held |= lifted & grasping
    assert held.all()


def test_is_grasping_needs_two_pad_links(env):
    spec = env.robot.spec
    no_pads = dataclasses.replace(spec, gripper=dataclasses.replace(spec.gripper, pad_links=()))
    with pytest.raises(ValueError, match="must declare two RobotSpec.gripper.pad_links"):
        Robot(no_pads, "pd_ee_delta_pose").is_grasping(env.task.cube)


def test_scripted_policy_takes_no_argument_or_an_obs(env):
    obs, _ = env.reset(seed=4)
    plain, with_obs = env.task.solution_policy(), env.task.solution_policy()
    for _ in range(12):
        action = plain()
        assert torch.equal(with_obs(obs), action)           # the obs is ignored
        obs, *_ = env.step(action)
    assert torch.equal(plain.phase, with_obs.phase) and (plain.phase > 0).all()


def test_robosim_tasks_registers_every_entry_point_task():
    import robosim_tasks  # noqa: F401  (registers its tasks)
    from robosim.envs.registry import TASKS

    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(os.path.dirname(__file__), "..", "..", "setup.cfg"))
    declared = {line.split("=")[0].strip(): line.split("=")[1].strip()
                for line in cfg["options.entry_points"]["robosim.tasks"].strip().splitlines()}
    assert len(declared) == 22   # the 15 of 0.1 and the seven of issue 34
    for task_id, target in declared.items():
        module, cls = target.split(":")
        assert task_id in TASKS.entries, task_id
        assert TASKS.entries[task_id].__module__ == module and TASKS.entries[task_id].__name__ == cls
