"""The demonstration factory: N successful scripted episodes of a task in one HDF5 file.

`generate_demos(task, num, out)` runs the task's scripted solution
(`env.task.solution_policy()`) on `num_envs` envs with physics_isolation="separate",
so every episode depends only on its seed and its actions and replays bit-exactly
(`robosim replay --mode actions`). Env i starts with seed + i; each env that ends an
episode restarts with the next unused seed. An episode is kept when it ends with
success; failed and truncated ones are dropped. The run stops at `num` kept episodes,
or when `max_tries` episodes have been started and finished (the cap: the report says
so, and the file holds the episodes kept until then).

The file is robosim.record.trajectory's layout (written through RecordEpisode, so
every finished episode is durable at once) plus one root attribute `demos` (JSON):
  task, robot, control_mode, obs_mode, task_params, randomization (the event spec),
  num_envs, seed, requested, max_tries, kept, tried, successes, cap_hit, generator,
  action_noise.
Each episode's seed is its group's `seed` attribute. Every written episode carries the
header, `demos` included (kept, tried and successes as of that episode), so a file
`robosim recover` makes of an interrupted run has it too.

DART (`action_noise` SIGMA > 0; Laskey et al. 2017): every executed action is the
scripted (clean) action plus Gaussian noise N(0, SIGMA^2) on every dimension (the env
clips the sum to the action box), while the file records the clean action, so a
learner is taught how the expert recovers from the states the noise leads to. The
noise of an episode comes from its seed alone (`episode_noise`), so
`executed_actions(episode, sigma)` re-creates what was executed (the recorded states
are the executed run's; `robosim replay --mode actions` of the clean actions does not
reproduce them, `--mode states` does).

Camera obs modes are added
after the run from the recorded states (robosim.demos.render), replacing the file
atomically; their sensor_configs are checked before the run starts. Interrupted
(Ctrl-C, SIGTERM): no file appears under `out`; the finished episodes stay in
`.NAME.<random>.parts/` for `robosim recover DIR`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from robosim.demos.recorder import DemoRecorder
from robosim.envs import EnvSpec, get_task, list_tasks, make
from robosim.envs.observations import CAMERA_OBS_MODES
from robosim.envs.registry import VISIBILITY_HINT
from robosim.envs.solutions import EE_CONTROL_MODES
from robosim.record.files import check_output_path
from robosim.record.trajectory import TRAJECTORY_SUFFIXES, Episode

STATE_OBS_MODES = ("state", "state_dict", "none")


def check_count(arg: str, value, minimum: int = 1) -> int:
    """`value` as an int >= minimum, else ValueError naming `arg`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{arg} must be an int >= {minimum}, got {value!r}")
    return value


def check_task(arg: str, task: str) -> str:
    """A registered task id (ValueError naming `arg` and the registered ids otherwise)."""
    if task not in list_tasks():
        raise ValueError(f"{arg} must be a registered task, one of {list_tasks()}, got {task!r}. {VISIBILITY_HINT}")
    return task


@dataclass
class GenerateReport:
    """What a generation run did. tried: episodes that ended; successes: those that
    ended in success (kept <= successes: the ones past `requested` are not written)."""

    task: str
    robot: str
    path: str
    requested: int
    max_tries: int
    kept: int = 0
    tried: int = 0
    successes: int = 0
    cap_hit: bool = False
    seconds: float = 0.0

    @property
    def yield_rate(self) -> float:
        return self.successes / max(self.tried, 1)

    def summary(self) -> str:
        head = (f"{self.task} (robot {self.robot}): kept {self.kept} of {self.requested} demos; yield "
                f"{self.successes}/{self.tried} = {self.yield_rate:.1%} successful episodes; "
                f"{self.seconds:.1f} s -> {self.path}")
        if self.cap_hit:
            head += (f"\ncap hit: {self.max_tries} episodes tried (--max-tries) before {self.requested} "
                     f"succeeded; the file holds the {self.kept} kept")
        return head


def generate_demos(task: str, num: int, out: str, *, robot: str | None = None, control_mode: str | dict | None = None,
                   obs_mode: str = "state", task_params: dict | None = None, num_envs: int = 4, seed: int = 0,
                   max_tries: int | None = None, sensor_configs: dict | None = None, action_noise: float = 0.0,
                   progress: bool = False) -> GenerateReport:
    """Write `num` successful scripted episodes of `task` to `out` (.h5); see the module
    docstring. max_tries: cap on episodes tried (default 3 * num + num_envs).
    action_noise: DART noise std (action units) added to the executed actions, >= 0.
    Every argument is checked (ValueError/TypeError naming it) before anything is built
    or written."""
    check_task("task", task)
    check_count("num (-n)", num)
    check_count("num_envs", num_envs)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    if isinstance(action_noise, bool) or not isinstance(action_noise, (int, float)) or not 0 <= action_noise < math.inf:
        raise ValueError(f"action_noise (--action-noise) must be a number >= 0 (std in action units), "
                         f"got {action_noise!r}")
    max_tries = 3 * num + num_envs if max_tries is None else max_tries
    check_count("max_tries", max_tries, minimum=num)
    task_cls = get_task(task)
    control_mode = task_cls.default_control_mode if control_mode is None else control_mode
    modes = control_mode.values() if isinstance(control_mode, dict) else [control_mode]   # {slot: mode}: each
    if not all(mode in EE_CONTROL_MODES for mode in modes):
        raise ValueError(f"control_mode must be one the scripted solutions act in, one of {list(EE_CONTROL_MODES)}, "
                         f"got {control_mode!r} (generate, then `robosim demos convert --to-control-mode` "
                         f"for joint modes)")
    if obs_mode not in STATE_OBS_MODES + CAMERA_OBS_MODES:
        raise ValueError(f"obs_mode must be one of {list(STATE_OBS_MODES + CAMERA_OBS_MODES)}, got {obs_mode!r}")
    task_params = task_cls.check_parameters(dict(task_params or {}))
    _check_sensor_configs(task, obs_mode, sensor_configs)
    out = check_output_path("out", out, TRAJECTORY_SUFFIXES)
    num_envs = min(num_envs, max_tries)
    env = make(task, num_envs=num_envs, obs_mode="none", control_mode=control_mode, reward_mode="dense",
                       physics_isolation="separate", seed=seed, robot=robot, **task_params)
    robots = {slot: r.spec.name for slot, r in env.robots.items()}   # a multi-robot env: "left=panda,right=panda"
    robot_name = ",".join(f"{s}={n}" for s, n in robots.items()) if len(robots) > 1 else next(iter(robots.values()))
    report = GenerateReport(task, robot_name, out, num, max_tries)
    try:
        policy = env.task.solution_policy()
    except NotImplementedError as err:
        env.close()
        raise ValueError(f"task must have a scripted solution to generate demos, got {task!r}: {err}") from None

    config = dict(task=task, robot=report.robot, control_mode=control_mode, obs_mode=obs_mode,
                  task_params=task_params, randomization=env.randomization.spec, num_envs=num_envs, seed=seed,
                  requested=num, max_tries=max_tries, generator="robosim demos generate",
                  action_noise=float(action_noise))

    def keep(episode: Episode) -> bool:
        report.tried += 1
        if not (len(episode.success) and episode.success[-1]):
            return False
        report.successes += 1
        if report.kept >= num:
            return False
        report.kept += 1
        # written into this episode's part file: a recovered file keeps `demos`
        recorder.trajectory.header["demos"] = _demos_header(config, report)
        return True

    try:
        recorder = DemoRecorder(env, out, keep)
    except BaseException:
        env.close()
        raise
    start = time.perf_counter()
    try:
        _run(recorder, policy, report, seed, float(action_noise), progress)
        report.seconds = time.perf_counter() - start
        recorder.trajectory.header["demos"] = _demos_header(config, report)
    except BaseException:   # Ctrl-C, SIGTERM, an error: finished episodes stay recoverable, no final file
        recorder.abandon()
        raise
    recorder.close()
    if obs_mode in CAMERA_OBS_MODES and report.kept:
        from robosim.demos.render import render_demos

        render_demos(out, out, obs_mode, sensor_configs=sensor_configs, progress=progress)
    report.seconds = time.perf_counter() - start
    return report


def _demos_header(config: dict, report: GenerateReport) -> dict:
    return {**config, "kept": report.kept, "tried": report.tried, "successes": report.successes,
            "cap_hit": report.cap_hit}


def _check_sensor_configs(task: str, obs_mode: str, sensor_configs: dict | None) -> None:
    """sensor_configs (--sensor-size) before the run: only with a camera obs mode, and
    valid for the task's cameras (ValueError naming it)."""
    if sensor_configs is None:
        return
    if obs_mode not in CAMERA_OBS_MODES:
        raise ValueError(f"sensor_configs (--sensor-size) applies to camera obs modes {list(CAMERA_OBS_MODES)} "
                         f"only, got it with obs_mode {obs_mode!r}")
    try:
        EnvSpec(task, obs_mode=obs_mode, sensor_configs=sensor_configs)   # checks the cameras
    except (TypeError, ValueError) as err:
        raise ValueError(f"sensor_configs (--sensor-size) must give the task valid cameras, got "
                         f"{sensor_configs!r}: {err}") from None


def episode_noise(seed: int) -> np.random.Generator:
    """The DART noise stream of the episode reset with `seed`: its t-th
    standard_normal(A) draw, times sigma, is added to its t-th action."""
    return np.random.default_rng([seed, 0xDA27])


def executed_actions(episode: Episode, sigma: float) -> np.ndarray:
    """float32 (T, A): the actions `generate_demos(action_noise=sigma)` executed in
    `episode` (its recorded clean actions plus its seed's noise; the env clips them)."""
    if sigma == 0:
        return episode.actions
    rng = episode_noise(episode.seed)
    noise = np.stack([rng.standard_normal(episode.actions.shape[1]) for _ in range(episode.length)])
    return episode.actions + (sigma * noise).astype(np.float32)


def _run(recorder: DemoRecorder, policy, report: GenerateReport, seed: int, sigma: float, progress: bool) -> None:
    """Step the scripted policy until report.requested episodes are kept or the cap is hit."""
    from tqdm import tqdm

    n = recorder.num_envs
    active = torch.ones(n, dtype=torch.bool)
    started, next_seed = n, seed + n
    noise = [episode_noise(seed + i) for i in range(n)]
    recorder.reset(seed=seed)
    with tqdm(total=report.requested, desc=f"demos {report.task}", unit="demo", disable=not progress) as bar:
        while report.kept < report.requested:
            clean = policy()
            if sigma:
                draws = np.stack([rng.standard_normal(clean.shape[1]) for rng in noise])
                executed = clean.cpu() + torch.from_numpy((sigma * draws).astype(np.float32))
                _, _, terminated, truncated, _ = recorder.step(executed.to(clean.device))
                recorder.relabel_actions(clean.detach().cpu().float().numpy())
            else:
                _, _, terminated, truncated, _ = recorder.step(clean)
            done = ((terminated | truncated).cpu() & active).nonzero().flatten().tolist()
            if not done:
                continue
            kept_before = report.kept
            recorder.finish(done)   # keep() counts them in report.tried
            bar.update(report.kept - kept_before)
            bar.set_postfix_str(f"yield {report.successes}/{report.tried}")
            if report.kept >= report.requested:
                break
            restart = done[:max(0, report.max_tries - started)]
            for i in done[len(restart):]:
                active[i] = False
            if not active.any():
                report.cap_hit = True
                break
            if restart:
                recorder.start(restart, list(range(next_seed, next_seed + len(restart))))
                for j, i in enumerate(restart):
                    noise[i] = episode_noise(next_seed + j)
                started += len(restart)
                next_seed += len(restart)

