"""Events of mode "step": terms on the action the env takes and the observation it returns.

Every control step, each action event perturbs the action before BaseEnv clips it to
the action space and gives it to the controller, and each
observation event perturbs the observation the env returns (after reset and after
step). A draw of env i comes from its own stream keyed by (seed_i, event name, episode
k, control step t, leaf), so noise never depends on i, num_envs or other envs.
Nothing is computed when no step event is declared.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from robosim.randomization.events import Event, EventDraws
from robosim.randomization.rng import EVENT_EPISODE, EnvRandomStreams
from robosim.randomization.targets import StreamTarget


class StepTerms:
    """The step-mode events of one env batch (see the module docstring)."""

    def __init__(self, events: list[Event], num_envs: int):
        self.num_envs = num_envs
        self.action = [e for e in events if e.mode == "step" and e.kind == "action"]
        self.observation = [e for e in events if e.mode == "step" and e.kind == "observation"]
        self._targets = {e.name: StreamTarget(e, e.target) for e in self.action + self.observation}
        self._draws = {e.name: EventDraws(e) for e in self.action + self.observation}
        self._dists: dict[tuple[str, str], Any] = {}
        self._all = torch.arange(num_envs)

    def __bool__(self) -> bool:
        return bool(self.action or self.observation)

    def bind(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Check every event's target and dist against one env's spaces (ValueError naming
        the event); called once the env knows its spaces."""
        for event in self.action + self.observation:
            target = self._targets[event.name]
            target.bind(action_space if event.kind == "action" else observation_space)
            space = action_space if event.kind == "action" else observation_space
            for path in target.paths:
                width = int(torch.tensor(_leaf_space(space, path).shape).prod())
                self._dists[(event.name, path)] = event.dist.widened(f"randomization[{event.name!r}]['dist']",
                                                                     width)

    def _perturb(self, event: Event, tensor: torch.Tensor, path: str, leaf: int, streams: EnvRandomStreams,
                 steps: torch.Tensor) -> torch.Tensor:
        key, idx = self._draws[event.name].hash, self._all
        steps = steps.cpu().to(torch.int64)
        mask = torch.ones(self.num_envs, dtype=torch.bool)
        if event.envs is not None:
            mask &= torch.isin(idx, torch.tensor(event.envs, dtype=torch.int64))
        if event.probability < 1.0:
            mask &= streams.event(key, EVENT_EPISODE, idx, steps, 2 * leaf).uniform(0.0, 1.0) < event.probability
        rows = torch.nonzero(mask).flatten()
        shape = tensor.shape
        target = self._targets[event.name]
        target.tensor = tensor.reshape(shape[0], -1).clone()
        if len(rows):
            values = self._dists[(event.name, path)].sample(streams.event(key, EVENT_EPISODE, idx, steps,
                                                                          2 * leaf + 1))
            event.term.fn(target, event, rows, values[rows].to(tensor.device))
        return target.tensor.reshape(shape)

    def perturb_action(self, action: torch.Tensor, streams: EnvRandomStreams, steps: torch.Tensor) -> torch.Tensor:
        """action float32 (N, A) -> a perturbed copy (the input is not changed). streams:
        the env's random streams; steps: int (N,) control steps each env has done in its
        episode."""
        for event in self.action:
            action = self._perturb(event, action, "", 0, streams, steps)
        return action

    def perturb_observation(self, obs: Any, streams: EnvRandomStreams, steps: torch.Tensor) -> Any:
        """obs (a tensor or a dict tree of (N, ...) tensors) -> the same structure with the
        named float leaves replaced by perturbed copies (the input is not changed)."""
        for event in self.observation:
            for leaf, path in enumerate(self._targets[event.name].paths):
                obs = _replace(obs, path, self._perturb(event, _get(obs, path), path, leaf, streams, steps))
        return obs


def _leaf_space(space: gym.Space, path: str) -> gym.Space:
    for key in filter(None, path.split("/")):
        space = space.spaces[key]
    return space


def _get(tree: Any, path: str) -> torch.Tensor:
    for key in filter(None, path.split("/")):
        tree = tree[key]
    return tree


def _replace(tree: Any, path: str, value: torch.Tensor) -> Any:
    if not path:
        return value
    head, _, rest = path.partition("/")
    out = dict(tree)
    out[head] = _replace(tree[head], rest, value)
    return out
