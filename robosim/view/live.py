"""Running an env live in the viewer: a policy drives it, the browser's controls pause,
step, reset and slow it down.

The GUI's callbacks run on viser's threads; they only set requests on `Controls`, and
the loop (`run_live`, on the caller's thread) applies them between steps, so the env is
only ever touched from one thread.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from robosim.view.viewer import Viewer


class Controls:
    """The live run's GUI panel: pause (checkbox), step, reset all, reset one env,
    time scale (1 = real time of the env's control_dt; 0 = as fast as possible), and the
    overlay toggles (contact points, force arrows and their N-per-metre scale, camera frustums)."""

    def __init__(self, viewer: Viewer, title: str = "run", time_scale: float = 1.0):
        gui = viewer.server.gui
        self._lock = threading.Lock()
        self._step_requests = 0
        self._resets: set[int] | None = None    # None: no reset asked; empty set: all envs
        n = viewer.env.num_envs
        with gui.add_folder(title):
            self.pause = gui.add_checkbox("pause", initial_value=False)
            self.step_button = gui.add_button("step", hint="one control step while paused")
            self.time_scale = gui.add_slider("time scale", min=0.0, max=4.0, step=0.05, initial_value=time_scale,
                                             hint="1: real time; 0: as fast as possible")
            self.reset_all_button = gui.add_button("reset all")
            self.env_choice = gui.add_slider("env", min=0, max=max(n - 1, 1), step=1, initial_value=0,
                                             disabled=n == 1)
            self.reset_one_button = gui.add_button("reset env")
            self.show = gui.add_dropdown("show", ["all envs", *[f"env {i}" for i in range(n)]],
                                         initial_value="all envs")
            self.contacts = gui.add_checkbox("contact points", initial_value=False)
            self.forces = gui.add_checkbox("force arrows", initial_value=False)
            self.force_scale = gui.add_slider("force scale (N/m)", min=1.0, max=1000.0, step=1.0,
                                              initial_value=viewer.force_scale,
                                              hint="newtons of contact force per metre of arrow")
            self.frustums = gui.add_checkbox("camera frustums", initial_value=False)
        self.step_button.on_click(lambda _: self.request_step())
        self.reset_all_button.on_click(lambda _: self.request_reset(None))
        self.reset_one_button.on_click(lambda _: self.request_reset(int(self.env_choice.value)))
        self.show.on_update(lambda _: viewer.set_env_visible(
            None if self.show.value == "all envs" else int(self.show.value.split()[1])))
        self.contacts.on_update(lambda _: setattr(viewer, "show_contacts", bool(self.contacts.value)))
        self.forces.on_update(lambda _: setattr(viewer, "show_forces", bool(self.forces.value)))
        self.force_scale.on_update(lambda _: setattr(viewer, "force_scale", float(self.force_scale.value)))
        self.frustums.on_update(lambda _: setattr(viewer, "show_frustums", bool(self.frustums.value)))

    def request_step(self) -> None:
        with self._lock:
            self._step_requests += 1

    def request_reset(self, env_index: int | None) -> None:
        """Reset env `env_index` (or every env: None) before the next step."""
        with self._lock:
            if env_index is None:
                self._resets = set()
            elif self._resets is None:
                self._resets = {env_index}
            elif self._resets:
                self._resets.add(env_index)

    def take_step(self) -> bool:
        """Whether the loop may step now (not paused, or a step was asked for)."""
        if not self.pause.value:
            return True
        with self._lock:
            if self._step_requests:
                self._step_requests -= 1
                return True
        return False

    def take_resets(self) -> set[int] | None:
        """The resets asked for since the last call (see request_reset), then forgets them."""
        with self._lock:
            resets, self._resets = self._resets, None
        return resets


def zero_policy(env) -> Callable[[Any], torch.Tensor]:
    """Zero actions (N, A) (the flat action of every robot): robots hold still under most
    control modes."""
    zeros = torch.zeros(getattr(env, "flat_action_space", env.action_space).shape)
    return lambda obs: zeros


def run_live(env, viewer: Viewer, policy: Callable[[Any], torch.Tensor], controls: Controls,
             seed: int = 0, max_steps: int | None = None, on_step: Callable | None = None) -> int:
    """Step `env` with `policy(obs) -> action (N, A)` until `max_steps` control steps (None:
    until interrupted), resetting each env whose episode ended (env i's k-th episode is
    seeded seed + i + k * N), applying the controls' requests and pushing every step to
    the viewer (which drops frames over its rate). `on_step(obs, action, reward,
    terminated, truncated, info)` hears every step. Returns the number of steps taken."""
    n = env.num_envs
    episodes = torch.zeros(n, dtype=torch.int64)
    obs, info = env.reset(seed=[seed + i for i in range(n)])
    steps = 0
    while max_steps is None or steps < max_steps:
        resets = controls.take_resets()
        if resets is not None:
            idx = sorted(resets) if resets else list(range(n))
            obs, info = _reset(env, idx, episodes, seed)
            viewer.update(info=info, force=True)
        if not controls.take_step():
            time.sleep(0.02)
            continue
        start = time.perf_counter()
        action = policy(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        if on_step is not None:
            on_step(obs, action, reward, terminated, truncated, info)
        viewer.update(reward, info, force=bool(controls.pause.value))
        done = torch.as_tensor(terminated | truncated).cpu()
        if done.any():
            obs, info = _reset(env, done.nonzero().flatten().tolist(), episodes, seed)
        scale = float(controls.time_scale.value)
        if scale > 0:
            time.sleep(max(0.0, 1.0 / env.task.control_freq / scale - (time.perf_counter() - start)))
    return steps


def _reset(env, idx: list[int], episodes: torch.Tensor, seed: int):
    """Reset envs idx with their next episode's seed; the obs and info of all envs."""
    n = env.num_envs
    episodes[idx] += 1
    seeds = [seed + i + int(episodes[i]) * n for i in idx]
    return env.reset(seed=seeds, options={"env_idx": torch.tensor(idx)})
