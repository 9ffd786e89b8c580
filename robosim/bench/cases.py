"""The things the benchmark times: robosim, ManiSkill3 and the raw PhysX ceiling.

Each case builds its env once (`setup`, untimed, memory noted) and then runs timed
blocks (`run_block`). A block starts from a seeded reset (untimed) and steps with
random actions from a fixed pool; only the calls that advance the simulation are
timed. Episodes are 50 control steps (PickCube's limit): the untimed reset between
episodes keeps every block in the same regime. The reset-heavy variant instead times
its resets: env i resets (options["env_idx"]) whenever (t + i) % 10 == 0, so every env
resets every 10 steps and a tenth of the batch resets at each step.

A "replay" ceiling case measures robosim's overhead alone: it steps the env of a robosim
step case (`replays`) in lockstep with the bare ceiling scene. Each block resets both to
the same states, then every control step times env.step, hands the drive targets
robosim's controller set to the ceiling, and times the ceiling's substeps. Both see the
same motion and, step by step, the same machine load; the case's rate is the ceiling's,
and `paired` keeps each block's ceiling time / robosim time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import psutil
import torch

TASK = "PickCube-v1"
EPISODE_STEPS = 50
RESET_EVERY = 10
ACTION_POOL = 64


@dataclass
class BlockResult:
    env_steps: int      # control steps x envs that were timed
    seconds: float      # wall time of the timed calls

    @property
    def rate(self) -> float:
        return self.env_steps / self.seconds if self.seconds > 0 else float("nan")


@dataclass
class Case:
    """One row x column of the result table."""

    system: str                 # "robosim" | "maniskill" | "ceiling"
    control_mode: str           # the robosim/ManiSkill control mode; ceiling: its motion
    num_envs: int
    variant: str = "step"       # "step" | "reset_heavy" | "hold" | "random" | "replay"
    sim_backend: str = "physx_cpu"
    replays: Case | None = field(default=None, repr=False)   # replay ceiling: the robosim step case it runs with
    paired: list[float] = field(default_factory=list)   # replay: ceiling / robosim time of each block
    rates: list[float] = field(default_factory=list)    # env-steps/s of each block
    rss_delta_mb: float = float("nan")                  # RSS growth while building
    build_seconds: float = float("nan")

    @property
    def key(self) -> str:
        return f"{self.system}/{self.control_mode}/{self.variant}/{self.sim_backend}/N={self.num_envs}"

    # -- lifecycle -------------------------------------------------------------------
    def setup(self) -> None:
        proc = psutil.Process()
        before = proc.memory_info().rss
        start = time.perf_counter()
        self._runner = _RUNNERS[self.system](self)
        self.build_seconds = time.perf_counter() - start
        self.rss_delta_mb = (proc.memory_info().rss - before) / 2**20

    def run_block(self, min_seconds: float, min_steps: int, seed: int) -> BlockResult:
        result = self._runner.run_block(min_seconds, min_steps, seed)
        self.rates.append(result.rate)
        return result

    def close(self) -> None:
        runner = getattr(self, "_runner", None)
        if runner is not None:
            runner.close()
            self._runner = None


def _timed_loop(step, reset_episode, min_seconds: float, min_steps: int) -> tuple[int, float]:
    """Call step(t) until both limits are reached; reset_episode() (untimed) every
    EPISODE_STEPS steps. Returns (control steps, timed seconds)."""
    timed, t = 0.0, 0
    while timed < min_seconds or t < min_steps:
        if t and t % EPISODE_STEPS == 0:
            reset_episode()
        start = time.perf_counter()
        step(t)
        timed += time.perf_counter() - start
        t += 1
    return t, timed


class _RobosimRunner:
    def __init__(self, case: Case):
        from robosim.envs import make

        self.case = case
        self.env = make(TASK, num_envs=case.num_envs, obs_mode="state", control_mode=case.control_mode,
                                reward_mode="dense", sim_backend=case.sim_backend)
        gen = torch.Generator().manual_seed(1234)
        low = torch.as_tensor(self.env.single_action_space.low)
        high = torch.as_tensor(self.env.single_action_space.high)
        shape = (ACTION_POOL, case.num_envs, low.shape[0])
        self.actions = (low + (high - low) * torch.rand(shape, generator=gen)).to(self.env.device)
        n = case.num_envs
        self.reset_groups = [torch.nonzero((torch.arange(n) + t) % RESET_EVERY == 0).flatten()
                             for t in range(RESET_EVERY)]

    def run_block(self, min_seconds, min_steps, seed):
        env, actions = self.env, self.actions
        env.reset(seed=seed)
        if self.case.variant == "reset_heavy":
            groups = self.reset_groups

            def step(t):
                idx = groups[t % RESET_EVERY]
                if len(idx):
                    env.reset(options={"env_idx": idx})
                env.step(actions[t % ACTION_POOL])

            reset_episode = lambda: None  # noqa: E731  (resets are part of the timed work)
        else:
            def step(t):
                env.step(actions[t % ACTION_POOL])

            reset_episode = env.reset
        steps, seconds = _timed_loop(step, reset_episode, min_seconds, min_steps)
        return BlockResult(steps * self.case.num_envs, seconds)

    def close(self):
        self.env.close()


class _ManiSkillRunner:
    """ManiSkill3 PickCube-v1, physx_cpu, state obs, one env (its CPU limit per process).

    render_backend="none": state obs never render, and this machine's software Vulkan
    driver is not one ManiSkill can select by name."""

    def __init__(self, case: Case):
        import gymnasium as gym
        import mani_skill.envs  # noqa: F401  (registers PickCube-v1)

        if case.num_envs != 1:
            raise ValueError(f"ManiSkill3 runs one env per process on physx_cpu, got num_envs={case.num_envs}")
        self.case = case
        # ManiSkill3's default PhysX settings equal robosim's PhysicsConfig, including the
        # worker threads robosim would use for one env (none)
        self.env = gym.make(TASK, obs_mode="state", control_mode=case.control_mode, sim_backend="physx_cpu",
                            render_backend="none")
        space = self.env.action_space
        space.seed(1234)
        self.actions = [torch.as_tensor(space.sample()) for _ in range(ACTION_POOL)]

    def run_block(self, min_seconds, min_steps, seed):
        env, actions = self.env, self.actions
        env.reset(seed=seed)
        steps, seconds = _timed_loop(lambda t: env.step(actions[t % ACTION_POOL]), env.reset, min_seconds, min_steps)
        return BlockResult(steps, seconds)

    def close(self):
        self.env.close()


class _CeilingRunner:
    def __init__(self, case: Case):
        from robosim.bench.ceiling import PhysxCeiling

        self.case = case
        self.ceiling = PhysxCeiling(case.num_envs, motion=case.variant)

    def run_block(self, min_seconds, min_steps, seed):
        if self.case.variant == "replay":
            return self._lockstep_block(min_seconds, min_steps, seed)
        c = self.ceiling
        c.reset(seed)
        timed, t = 0.0, 0
        while timed < min_seconds or t < min_steps:
            if t and t % EPISODE_STEPS == 0:
                c.reset(seed + t)
            c.control()                       # untimed: new drive targets
            timed += c.timed_control_step()   # timed: the bare substeps
            t += 1
        return BlockResult(t * self.case.num_envs, timed)

    def _start_together(self, env) -> None:
        """The ceiling's envs where robosim's are now (robosim re-reads its state itself)."""
        view, cube = env.robot.view, env.task.cube
        self.ceiling.set_states(*(read().cpu().numpy() for read in
                                  (view.qpos, view.qvel, view.drive_targets, cube.pose, cube.velocity)))
        env.parts.sim.read_cache.invalidate()

    def _lockstep_block(self, min_seconds, min_steps, seed) -> BlockResult:
        runner = self.case.replays._runner
        env, actions, c = runner.env, runner.actions, self.ceiling
        env.reset(seed=seed)
        self._start_together(env)
        timed, robosim_timed, t = 0.0, 0.0, 0
        while robosim_timed < min_seconds or t < min_steps:
            if t and t % EPISODE_STEPS == 0:
                env.reset()
                self._start_together(env)
            start = time.perf_counter()
            env.step(actions[t % ACTION_POOL])
            robosim_timed += time.perf_counter() - start
            c.set_all_targets(env.robot.view.drive_targets().cpu().numpy())   # untimed
            timed += c.timed_control_step()
            t += 1
        self.case.paired.append(timed / robosim_timed)
        return BlockResult(t * self.case.num_envs, timed)

    def close(self):
        self.ceiling.close()


_RUNNERS = {"robosim": _RobosimRunner, "maniskill": _ManiSkillRunner, "ceiling": _CeilingRunner}


def median(values: list[float]) -> float:
    return float(np.median(values)) if values else float("nan")


# -- physx_cuda cases: one fresh process each --------------------------------------------
# GPU PhysX must be enabled before any PhysX object exists in a process, so a CUDA case
# never shares a process with CPU cases (runner.run_cuda_case starts this worker).
def _cuda_env(system: str, num_envs: int, control_mode: str):
    if system == "robosim":
        from robosim.envs import make

        return make(TASK, num_envs=num_envs, obs_mode="state", control_mode=control_mode,
                            reward_mode="dense", sim_backend="physx_cuda")
    import gymnasium as gym
    import mani_skill.envs  # noqa: F401  (registers PickCube-v1)

    return gym.make(TASK, num_envs=num_envs, obs_mode="state", control_mode=control_mode,
                    sim_backend="physx_cuda", render_backend="none")


def cuda_case(system: str, num_envs: int, control_mode: str, repeats: int, block_steps: int, seed: int) -> dict:
    """Time `repeats` blocks of `block_steps` control steps of one CUDA env batch.

    The device is synchronized before each clock read, so a block's time covers all the
    GPU work its steps queued; the reset between blocks is untimed. Returns env-steps/s
    of each block plus the build time (s) and peak GPU memory (MB)."""
    import torch

    start = time.perf_counter()
    env = _cuda_env(system, num_envs, control_mode)
    build_seconds = time.perf_counter() - start
    space = env.single_action_space if hasattr(env, "single_action_space") else env.action_space
    low = torch.as_tensor(space.low, device="cuda").reshape(-1)[-space.shape[-1]:]
    high = torch.as_tensor(space.high, device="cuda").reshape(-1)[-space.shape[-1]:]
    gen = torch.Generator(device="cuda").manual_seed(1234)
    actions = low + (high - low) * torch.rand(ACTION_POOL, num_envs, low.shape[0], device="cuda", generator=gen)
    rates = []
    try:
        for rep in range(repeats + 1):                 # block 0 is a warm-up, not recorded
            env.reset(seed=seed + rep)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for t in range(block_steps):
                env.step(actions[t % ACTION_POOL])
            torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
            if rep:
                rates.append(block_steps * num_envs / seconds)
    finally:
        env.close()
    return {"rates": rates, "build_seconds": build_seconds,
            "gpu_peak_mb": torch.cuda.max_memory_allocated() / 2**20}


def cuda_worker_main(argv: list[str] | None = None) -> None:
    """`python -c 'from robosim.bench.cases import cuda_worker_main; cuda_worker_main()' SPEC_JSON`:
    run cuda_case(**spec) and print its result as one line `RESULT <json>`."""
    import json
    import sys

    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    print("RESULT " + json.dumps(cuda_case(**spec)), flush=True)
