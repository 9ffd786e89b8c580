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

from robosim.randomization.distributions import Distribution
from robosim.randomization.events import Event, draw
from robosim.randomization.rng import EVENT_EPISODE, EnvRandomStreams
from robosim.randomization.targets import StreamTarget


class StepTerms:
    """The step-mode events of one env batch (see the module docstring)."""

    def __init__(self, events: list[Event], num_envs: int):
        self.action = [e for e in events if e.mode == "step" and e.kind == "action"]
        self.observation = [e for e in events if e.mode == "step" and e.kind == "observation"]
        self._targets = {e.name: StreamTarget(e, e.target) for e in self.action + self.observation}
        self._dists: dict[tuple[str, str], Distribution] = {}
        self._all = torch.arange(num_envs)

    def bind(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Check every event's target and dist against one env's spaces (ValueError naming
        the event); called once the env knows its spaces."""
        for event in self.action + self.observation:
            target = self._targets[event.name]
            target.bind(action_space if event.kind == "action" else observation_space)
            for path, width in target.widths.items():
                self._dists[(event.name, path)] = event.dist.widened(f"randomization[{event.name!r}]['dist']",
                                                                     width)

    def _perturb(self, event: Event, tensor: torch.Tensor, path: str, leaf: int, streams: EnvRandomStreams,
                 steps: torch.Tensor) -> torch.Tensor:
        mask, values = draw(event, streams, EVENT_EPISODE, steps.cpu().to(torch.int64), self._all,
                            self._dists[(event.name, path)], slot=2 * leaf)
        rows = torch.nonzero(mask).flatten()
        shape = tensor.shape
        target = self._targets[event.name]
        target.tensor = tensor.reshape(shape[0], -1).clone()
        if len(rows):
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
            for leaf, path in enumerate(self._targets[event.name].widths):
                obs = _replace(obs, path, self._perturb(event, _get(obs, path), path, leaf, streams, steps))
        return obs


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
