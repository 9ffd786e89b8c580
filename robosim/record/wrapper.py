"""RecordEpisode: wrap a BaseEnv to write an evaluation video and/or an HDF5 trajectory.

    env = robosim.make("PickCube-v1", num_envs=4, render_mode="rgb_array")
    with RecordEpisode(env, video="eval.mp4", trajectory="eval.h5") as env:
        obs, info = env.reset(seed=0)
        ...  # step / partial reset as usual

Video: one mp4 per wrapper (per evaluation run). Every reset and every step appends one
picture: the N envs' render() frames tiled in a grid, each with an overlay (env index,
step, reward, success). A frame taken after a partial reset shows the new episode.
Trajectory: robosim.record.trajectory's layout; an episode of env i ends when env i is
reset again or when the wrapper closes. Both files are written atomically; `close()`
(also reached through `with` when an exception escapes) leaves valid files holding
everything recorded so far. Closing the wrapper closes the env.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from robosim.envs import checks
from robosim.envs.protocol import BatchedEnv, check_env
from robosim.record.recover import point_to_leftovers
from robosim.record.trajectory import Episode, TrajectoryWriter
from robosim.record.video import VideoWriter


class _Running:
    """Buffers of one env's running episode."""

    def __init__(self, env_index: int, seed: int, state: np.ndarray, action_dim: int):
        self.env_index, self.seed, self.action_dim = env_index, seed, action_dim
        self.states, self.actions, self.rewards = [state], [], []
        self.success, self.terminated, self.truncated = [], [], []

    def episode(self) -> Episode:
        done = bool(self.terminated[-1] or self.truncated[-1]) if self.actions else False
        return Episode(
            env_index=self.env_index, seed=self.seed, states=np.stack(self.states),
            actions=np.stack(self.actions) if self.actions else np.zeros((0, self.action_dim), np.float32),
            rewards=np.asarray(self.rewards, np.float32), success=np.asarray(self.success, bool),
            terminated=np.asarray(self.terminated, bool), truncated=np.asarray(self.truncated, bool),
            complete=done)


class RecordEpisode:
    """Recording wrapper over a batched env (a robosim.envs.protocol.BatchedEnv; see the
    module docstring).

    video: mp4 path or None (needs render_mode "rgb_array" or "sensors");
    trajectory: .h5 path or None; fps: video frame rate (default: the env's control
    frequency); overlay: draw the per-tile text; cols: grid columns (default near-square)."""

    def __init__(self, env: BatchedEnv, video: str | None = None, trajectory: str | None = None,
                 fps: int | None = None, overlay: bool = True, cols: int | None = None):
        check_env("env", env, BatchedEnv)
        if video is not None and env.render_mode is None:
            raise ValueError("video needs an env made with render_mode='rgb_array' or 'sensors', "
                             "got render_mode=None")
        if video is None and trajectory is None:
            raise ValueError("RecordEpisode needs video and/or trajectory, got neither")
        self.env = env
        self.overlay, self.cols = overlay, cols
        for out in (video, trajectory):
            if isinstance(out, (str, os.PathLike)) and os.fspath(out):
                point_to_leftovers(os.path.dirname(os.path.abspath(os.fspath(out))))
                break
        header = env.header()
        self._action_dim = int(header["action_dim"])   # a multi-robot env's flat view, slots in order
        fps = header["control_freq"] if fps is None else fps
        self.video = VideoWriter(video, fps=fps) if video is not None else None
        try:
            self.trajectory = TrajectoryWriter(trajectory, header) if trajectory is not None else None
        except BaseException:
            if self.video is not None:
                self.video.discard()
            raise
        self._running: list[_Running | None] = [None] * env.num_envs
        if self.trajectory is not None:
            self.trajectory.pending = lambda: [r.episode() for r in self._running if r is not None]
        self._reward = torch.zeros(env.num_envs)
        self._success = torch.zeros(env.num_envs, dtype=torch.bool)
        self.closed = False

    def __getattr__(self, name: str):
        return getattr(self.env, name)

    # -- env API -------------------------------------------------------------------
    def reset(self, *, seed: Any = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)   # validates its arguments
        rebuilt = info.get("reconfigure")   # (N,) bool; absent from envs that never rebuild (Ray eval shards)
        if self.trajectory is not None and rebuilt is not None and bool(rebuilt.any()):   # record the new seeds
            self.trajectory.header.update(self.env.header())
        idx = (options or {}).get("env_idx")
        env_idx = (torch.arange(self.num_envs) if idx is None
                   else checks.to_env_index("options['env_idx']", idx, self.num_envs, torch.device("cpu")))
        seeds = checks.to_seeds("seed", seed, env_idx) or [-1] * len(env_idx)
        if self.trajectory is not None:
            state = self.env.get_state().cpu().numpy()
            for i, s in zip(env_idx.tolist(), seeds):
                self._end_episode(i)
                self._running[i] = _Running(i, s, state[i], self._action_dim)
        self._reward[env_idx] = 0.0
        self._success[env_idx] = info["success"].cpu()[env_idx]
        self._add_frame()
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.trajectory is not None:
            state = self.env.get_state().cpu().numpy()
            n, a = self.num_envs, self._action_dim
            if isinstance(action, dict):   # a multi-robot env's {slot: (N, a_slot)}: stored as its flat view
                action = torch.cat([torch.as_tensor(action[k]).detach().cpu().float()
                                    for k in self.single_action_space.spaces], dim=1)
            if action is None:
                act = np.full((n, a), np.nan, np.float32)   # "no control": replayed as step(None)
            else:
                act = torch.as_tensor(action).detach().cpu().float().numpy().reshape(n, a)
            # one host copy per tensor per step (element-wise reads of CUDA tensors sync N times)
            rew = reward.detach().float().cpu().numpy()
            succ, term, trunc = (t.detach().cpu().numpy() for t in (info["success"], terminated, truncated))
            for i, run in enumerate(self._running):
                if run is None:
                    continue
                run.states.append(state[i])
                run.actions.append(act[i])
                run.rewards.append(float(rew[i]))
                run.success.append(bool(succ[i]))
                run.terminated.append(bool(term[i]))
                run.truncated.append(bool(trunc[i]))
            self._reward, self._success = torch.from_numpy(rew), torch.from_numpy(succ)
        else:
            self._reward = reward.detach().cpu().float()
            self._success = info["success"].detach().cpu()
        self._add_frame()
        return obs, reward, terminated, truncated, info

    def render(self):
        return self.env.render()

    # -- internals -----------------------------------------------------------------
    def _end_episode(self, i: int) -> None:
        run = self._running[i]
        if run is not None and run.actions:
            self.trajectory.add_episode(run.episode())
        self._running[i] = None

    def _add_frame(self) -> None:
        if self.video is None:
            return
        frames = self.env.render()
        overlays = None
        if self.overlay:
            steps = self.env.elapsed_steps.cpu().tolist()
            overlays = [[f"env {i} step {steps[i]}", f"r {float(self._reward[i]):.2f}"]
                        + (["success"] if bool(self._success[i]) else []) for i in range(self.num_envs)]
        self.video.add_batch(frames, overlays, self.cols)

    def close(self, close_env: bool = True) -> None:
        """Finish both files (they keep everything recorded so far) and close the env
        (close_env=False leaves it open, e.g. to record the next clip with it)."""
        if self.closed:
            return
        self.closed = True
        errors = []   # every closer runs; the first error (the root cause) is raised
        for closer in (self.trajectory, self.video, self.env if close_env else None):
            if closer is not None:
                try:
                    closer.close()
                except BaseException as err:
                    errors.append(err)
        if errors:
            raise errors[0]

    def __enter__(self) -> RecordEpisode:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
