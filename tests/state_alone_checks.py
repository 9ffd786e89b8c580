"""Shared check: a scripted solution that reads the state alone."""
from __future__ import annotations

import torch


def assert_actions_depend_on_state_alone(first, second) -> set[int]:
    """Step `first` (reset already) under its task's scripted solution until every env's
    episode has ended once; at each step give a fresh policy on `second` (same task and
    num_envs) the recorded state through set_state and assert it returns the same action.
    Returns the phases the first policy reported in envs still in their first episode."""
    policy = first.task.solution_policy()
    phases: set[int] = set()
    done = torch.zeros(first.num_envs, dtype=torch.bool)
    for _ in range(first.max_episode_steps):
        action = policy()
        phases.update(policy.phase[~done].tolist())
        second.set_state(first.get_state())
        # built afresh every step: a policy carrying history from earlier calls would agree too
        assert torch.equal(second.task.solution_policy()(), action), f"phases {policy.phase.tolist()}"
        _, _, terminated, truncated, _ = first.step(action)
        done |= terminated | truncated
        if done.all():
            break
    return phases
