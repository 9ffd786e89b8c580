"""Playing a recorded trajectory or demos file in the viewer from its states.

Nothing is re-simulated: each frame writes the recorded state (env.set_state) into the
env the episode was recorded in (the file's env_spec rebuilds the same assets) and
pushes the poses. A timeline slider scrubs the episode, a dropdown picks the episode,
and play/pause runs the timeline at the task's control rate; a checkbox shows the camera
frustums (contact overlays are not offered: a written state has no contact list of its own).
"""
from __future__ import annotations

import threading
import time

import torch

from robosim.envs.spec import make_env
from robosim.record.trajectory import TrajectoryFile
from robosim.view.viewer import Viewer


class Playback:
    """A viewer over the env of trajectory file `path` (ValueError naming `arg` for a file
    that is not a robosim trajectory), showing one recorded episode at a time."""

    def __init__(self, path: str, port: int = 8080, host: str = "127.0.0.1", arg: str = "--trajectory"):
        self.file = TrajectoryFile(path, arg=arg)
        if len(self.file) == 0:
            raise ValueError(f"{arg} must hold at least one episode, got none in {path!r}")
        self.env = make_env(self.file.spec, render_mode="rgb_array", obs_mode="state", sim_backend="physx_cpu")
        try:
            self.env.reset(seed=0)
            self.viewer = Viewer(self.env, port=port, host=host)
        except BaseException:
            self.env.close()
            raise
        self._lock = threading.Lock()
        self._wanted: tuple[int, int] | None = None
        gui = self.viewer.server.gui
        self._names = names = [f"{k}: {name}" for k, name in enumerate(self.file.episode_names)]
        with gui.add_folder("trajectory"):
            self.episode_choice = gui.add_dropdown("episode", names, initial_value=names[0])
            self.timeline = gui.add_slider("step", min=0, max=1, step=1, initial_value=0)
            self.playing = gui.add_checkbox("play", initial_value=True)
            self.frustums = gui.add_checkbox("camera frustums", initial_value=False)
        # show() sets these widgets too; only a value other than the one shown is a request
        self.episode_choice.on_update(lambda _: names.index(self.episode_choice.value) != self.episode_index
                                      and self.request(names.index(self.episode_choice.value), 0))
        self.timeline.on_update(lambda _: int(self.timeline.value) != self.t
                                and self.request(self.episode_index, int(self.timeline.value)))
        self.frustums.on_update(lambda _: (setattr(self.viewer, "show_frustums", bool(self.frustums.value)),
                                           self.request(self.episode_index, self.t)))   # redrawn while paused
        self.episode_index, self.t = -1, 0
        self.show(0, 0)

    def request(self, episode: int, t: int) -> None:
        """Ask the playing thread to show step t of episode `episode` (GUI callbacks call this)."""
        with self._lock:
            self._wanted = (episode, t)

    def show(self, episode: int, t: int) -> None:
        """Write step t (0 = the first state) of episode `episode` into its env and push it."""
        if not 0 <= episode < len(self.file):
            raise ValueError(f"episode must be in [0, {len(self.file)}), got {episode}")
        t = int(t)
        if episode != self.episode_index:
            self.episode = self.file.episode(episode)
            self.episode_index = episode
            self.timeline.max = len(self.episode.states) - 1
            self.viewer.set_env_visible(self.episode.env_index)
            self.episode_choice.value = self._names[episode]
        self.t = t = min(max(t, 0), len(self.episode.states) - 1)
        state = torch.from_numpy(self.episode.states[t][None])
        self.env.set_state(state, env_idx=torch.tensor([self.episode.env_index]))
        if int(self.timeline.value) != t:
            self.timeline.value = t
        self.viewer.update(force=True)

    def play(self, max_frames: int | None = None) -> int:
        """Advance the timeline at the task's control rate while `play` is on, looping the
        episode, and apply the GUI's requests; returns after max_frames frames (None: until
        interrupted). Returns the frames shown."""
        frames, dt = 0, 1.0 / self.env.task.control_freq
        while max_frames is None or frames < max_frames:
            with self._lock:
                wanted, self._wanted = self._wanted, None
            if wanted is not None:
                self.show(*wanted)
            elif self.playing.value:
                self.show(self.episode_index, (self.t + 1) % len(self.episode.states))
            else:
                time.sleep(0.02)
                continue
            frames += 1
            time.sleep(dt)
        return frames

    def close(self) -> None:
        self.viewer.close()
        self.env.close()
