"""EventManager: applies the declared randomization events of one env batch.

It holds the env's EnvRandomStreams (robosim.randomization.rng), which key every draw
from the env's base seeds, build and episode counters. BaseEnv calls it at five
points, and each event runs where its term's declared phase (robosim.randomization.terms)
puts it: `object_modifiers()` after a build started and before the task builds its
scene (the phase "build" terms of "reconfigure" events, on the object descriptions;
handed to the SimScene as create_sim_scene's object_modifiers), `after_build(parts)`
once the scene and cameras exist (the other "reconfigure" events),
`before_episode(env_idx)` before the task initializes those envs' episodes (phase
"before_init" "reset" events, such as pool variant swaps, so the task places the object
in play), `on_reset(env_idx)` after it (phase "after_init" "reset" events),
and `before_control_step(action)`, a subscriber of BaseEnv.step's before-control-step
point (interval events that are due). Events of mode "step" perturb the action BaseEnv
takes (`perturb_action`, before the clip) and the observation it returns
(`perturb_observation`, after reset and step); BaseEnv calls them only when declared.
Every applied event is appended to `log` (event, mode, env, step, value).
"""
from __future__ import annotations

from typing import Any

import torch

from robosim.randomization.events import Event, EventLog, draw, merge_events, parse_events, periods_to_steps
from robosim.randomization.rng import EVENT_BUILD, EVENT_EPISODE, EnvRandomStreams
from robosim.randomization.step_terms import StepTerms
from robosim.randomization.targets import description_modifier, resolve_target
from robosim.sim.building import ObjectModifier


class EventManager:
    """The events of one env (see the module docstring). `spec` is the merged plain-data
    declaration: printable, JSON-able, saved into trajectory files."""

    def __init__(self, defaults: dict[str, dict], user: dict | None, streams: EnvRandomStreams,
                 control_dt: float, elapsed_steps: torch.Tensor):
        """streams: the env's random streams (draws are keyed by its seeds, builds and
        episodes); control_dt: seconds per control step; elapsed_steps: int (N,) the
        env's per-episode control-step counters (read, never written)."""
        num_envs = streams.num_envs
        self.streams = streams
        self.elapsed_steps = elapsed_steps
        self.spec = merge_events(defaults, user)
        self.events: list[Event] = parse_events(self.spec)
        for event in self.events:
            if event.envs is not None and max(event.envs, default=0) >= num_envs:
                raise ValueError(f"randomization[{event.name!r}]['envs'] must index envs < num_envs={num_envs}, "
                                 f"got {list(event.envs)}")
        self.num_envs = num_envs
        self.control_dt = control_dt
        self.log = EventLog()
        self.next_fire = {e.name: torch.full((num_envs,), -1, dtype=torch.int64)
                          for e in self.events if e.mode == "interval"}
        self.firings = {name: torch.zeros(num_envs, dtype=torch.int64) for name in self.next_fire}
        self._targets: dict[str, Any] = {}
        self.step_terms = StepTerms(self.events, num_envs)   # mode "step": action and observation terms
        self.perturbs_actions = bool(self.step_terms.action)
        self.perturbs_observations = bool(self.step_terms.observation)

    def __repr__(self) -> str:
        return f"EventManager({self.spec!r})"

    @property
    def randomizes_build(self) -> bool:
        return any(e.mode == "reconfigure" for e in self.events)

    # -- draws ----------------------------------------------------------------------
    def _draw(self, event: Event, phase: int, firing, env_idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mask (M,) bool, values (M, dim) float32) for env_idx (CPU) from their own streams."""
        return draw(event, self.streams, phase, firing, env_idx)

    def _record(self, event: Event, env_idx: torch.Tensor, mask: torch.Tensor, values: torch.Tensor,
                steps: torch.Tensor | int) -> None:
        for row, i in enumerate(env_idx.tolist()):
            if mask[row]:
                step = int(steps[i]) if isinstance(steps, torch.Tensor) else steps
                self.log.append({"event": event.name, "mode": event.mode, "env": i, "step": step,
                                 "value": values[row].tolist()})

    def _events(self, mode: str, phases: tuple[str, ...]) -> list[Event]:
        """The events of `mode` whose term runs in one of `phases`, in declaration order."""
        return [e for e in self.events if e.mode == mode and e.term.phase in phases]

    def _fire(self, event: Event, stream: int, env_idx: torch.Tensor) -> None:
        """Draw `event` for env_idx from their streams (stream: EVENT_BUILD or
        EVENT_EPISODE; firing 0), apply and log it."""
        mask, values = self._draw(event, stream, 0, env_idx)
        self._apply(event, env_idx, mask, values)
        self._record(event, env_idx, mask, values, 0)

    # -- build time -------------------------------------------------------------------
    def object_modifiers(self) -> dict[str, list[ObjectModifier]]:
        """{object name: [f(env_index, RigidObject) -> RigidObject]}: the phase "build"
        terms of the "reconfigure" events, drawn for the build the streams are at (call
        after streams.next_build())."""
        out: dict[str, list[ObjectModifier]] = {}
        all_envs = torch.arange(self.num_envs)
        for event in self._events("reconfigure", ("build",)):
            mask, values = self._draw(event, EVENT_BUILD, 0, all_envs)
            self._record(event, all_envs, mask, values, 0)
            out.setdefault(event.target, []).append(description_modifier(event, mask, values))
        return out

    def after_build(self, parts: Any) -> None:
        """Resolve every event's target in the built scene `parts` (robosim.envs.parts.
        EnvParts: sim, robot, cameras, sensor_cameras; ValueError naming the event for an
        unknown one), then apply the other "reconfigure" events to all envs."""
        self._targets = {e.name: resolve_target(e, parts, parts.sensor_cameras) for e in self.events}
        for event in self._events("reconfigure", ("before_init", "after_init")):
            self._fire(event, EVENT_BUILD, torch.arange(self.num_envs))

    # -- episodes ---------------------------------------------------------------------
    def before_episode(self, env_idx: torch.Tensor) -> None:
        """Apply the "reset" events of phase "before_init" (what is in the scene: pool
        variants) before the task initializes the episode, so the task places what is in play."""
        for event in self._events("reset", ("before_init",)):
            self._fire(event, EVENT_EPISODE, env_idx.cpu())

    def on_reset(self, env_idx: torch.Tensor) -> None:
        """Apply the "reset" events of phase "after_init" to env_idx (after the task
        initialized their episodes) and re-arm their interval timers."""
        env_idx = env_idx.cpu()
        for event in self.events:
            if event.mode == "reset" and event.term.phase == "after_init":
                self._fire(event, EVENT_EPISODE, env_idx)
            elif event.mode == "interval":
                self.firings[event.name][env_idx] = 0
                self.next_fire[event.name][env_idx] = self._period(event, 0, env_idx)

    def _period(self, event: Event, firing, env_idx) -> torch.Tensor:
        rng = self.streams.event(event.key, EVENT_EPISODE, env_idx, firing, 2)
        return periods_to_steps(event.period.sample(rng)[:, 0].double(), self.control_dt)

    @property
    def has_interval_events(self) -> bool:
        """True when `before_control_step` has anything to do (BaseEnv subscribes it only then)."""
        return bool(self.next_fire)

    def before_control_step(self, action: torch.Tensor | None) -> None:
        """Fire the interval events whose time has come (elapsed_steps: control steps
        done in each env's episode before this step); each env's next firing is drawn
        from its stream. `action` is unused (the step schedule's hook signature)."""
        if not self.next_fire:
            return
        elapsed = self.elapsed_steps.cpu().to(torch.int64)
        for event in self.events:
            if event.mode != "interval":
                continue
            due = torch.nonzero((self.next_fire[event.name] >= 0) & (elapsed >= self.next_fire[event.name])).flatten()
            if len(due) == 0:
                continue
            firings = self.firings[event.name]
            firings[due] += 1
            mask, values = self._draw(event, EVENT_EPISODE, firings, due)
            self._apply(event, due, mask, values)
            self._record(event, due, mask, values, elapsed)
            self.next_fire[event.name][due] = elapsed[due] + self._period(event, firings, due)

    # -- every step: action and observation terms ---------------------------------------
    def bind_spaces(self, observation_space: Any, action_space: Any) -> None:
        """Check the step events against one env's spaces (ValueError naming the event)."""
        self.step_terms.bind(observation_space, action_space)

    def perturb_action(self, action: torch.Tensor) -> torch.Tensor:
        """A perturbed copy of action float32 (N, A) (call only when perturbs_actions)."""
        return self.step_terms.perturb_action(action, self.streams, self.elapsed_steps)

    def perturb_observation(self, obs: Any) -> Any:
        """obs with its targeted leaves replaced by perturbed copies (call only when
        perturbs_observations)."""
        return self.step_terms.perturb_observation(obs, self.streams, self.elapsed_steps)

    def get_timers(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Copies of every interval event's (next firing step, firings so far), (N,) each."""
        return {name: (self.next_fire[name].clone(), self.firings[name].clone()) for name in self.next_fire}

    def set_timers(self, timers: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Inverse of get_timers (save_state / restore_state)."""
        for name, (next_fire, firings) in timers.items():
            self.next_fire[name].copy_(next_fire)
            self.firings[name].copy_(firings)

    def _apply(self, event: Event, env_idx: torch.Tensor, mask: torch.Tensor, values: torch.Tensor) -> None:
        rows = torch.nonzero(mask).flatten()
        if len(rows):
            self._targets[event.name].apply(event, env_idx[rows], values[rows])

