"""EpisodeTracker against per-env plain-Python bookkeeping of hand-built step sequences."""
from __future__ import annotations

import pytest
import torch
from gymnasium.vector import AutoresetMode

from robosim.vector import EpisodeTracker

# per step: rewards, terminated, truncated, success for 2 envs
STEPS = [
    ([1.0, 2.0], [False, False], [False, False], [False, False]),
    ([1.0, 2.0], [True, False], [False, False], [True, False]),   # env 0 ends by success
    ([5.0, 2.0], [False, False], [False, True], [False, True]),   # env 1 truncates (success on its last step)
    ([1.0, 3.0], [False, False], [False, False], [False, False]),
]


def reference(mode, gamma):
    """Finished episodes per env as (return, length, success_once, discounted) in plain Python."""
    out = {0: [], 1: []}
    for n in (0, 1):
        ret = length = disc = 0.0
        seen, pending = False, False
        for r, te, tr, s in STEPS:
            if mode == AutoresetMode.NEXT_STEP and pending:  # this step only resets the env
                pending = False
                continue
            ret, length, disc = ret + r[n], length + 1, disc * gamma + r[n]
            seen = seen or s[n]
            if te[n] or tr[n]:
                out[n].append((ret, length, seen, disc))
                ret = length = disc = 0.0
                seen, pending = False, True
    return out


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_tracker_matches_plain_bookkeeping(mode):
    tracker = EpisodeTracker(2, "cpu", mode, gamma=0.5)
    tracker.on_reset(torch.ones(2, dtype=torch.bool))
    got = {0: [], 1: []}
    for r, te, tr, s in STEPS:
        step = tracker.on_step(torch.tensor(r), torch.tensor(te), torch.tensor(tr), torch.tensor(s))
        if step.finished is not None:
            for n in step.done.nonzero().flatten().tolist():
                got[n].append((step.finished["r"][n].item(), int(step.finished["l"][n]),
                               bool(step.finished["success_once"][n]), step.discounted_returns[n].item()))
    assert got == reference(mode, 0.5)


def test_tracker_checks_its_arguments():
    with pytest.raises(ValueError, match="num_envs must be a positive int, got 0"):
        EpisodeTracker(0)
    with pytest.raises(ValueError, match="gamma must be a number in \\[0, 1\\], got 2"):
        EpisodeTracker(2, gamma=2)


def test_flags_are_tracked_per_episode_and_cleared_when_it_ends():
    tracker = EpisodeTracker(2, "cpu", AutoresetMode.DISABLED)
    zeros, no = torch.zeros(2), torch.zeros(2, dtype=torch.bool)
    first = tracker.on_step(zeros, no, no, flags={"grasped": torch.tensor([True, False])})
    assert first.finished is None and first.flags_once == {}
    ended = tracker.on_step(zeros, torch.tensor([True, False]), no, flags={"grasped": torch.tensor([False, False])})
    assert ended.flags_once["grasped"].tolist() == [True, False]     # env 0's episode saw it
    later = tracker.on_step(zeros, torch.tensor([True, True]), no, flags={"grasped": torch.tensor([False, True])})
    assert later.flags_once["grasped"].tolist() == [False, True]     # env 0's new episode did not
