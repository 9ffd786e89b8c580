"""Collision groups: a dropped box passes through a box below only in the envs where
the pair was disabled, and lands on it again after enable."""
from __future__ import annotations

import pytest
import torch

from robosim.sim import SimScene
from robosim.sim.isolation import IsolatedSimScene
from robosim.sim.objects import Box, RigidObject

N = 2


@pytest.mark.parametrize("isolation", ["shared", "separate"])
def test_boxes_pass_through_each_other_only_when_told(isolation):
    sim = SimScene(N, 100, render=False) if isolation == "shared" else IsolatedSimScene(N, 100)
    sim.add_ground()
    low = sim.add_object("low", RigidObject([Box(0.05)], pose=(0, 0, 0.05)))
    high = sim.add_object("high", RigidObject([Box(0.02)], pose=(0, 0, 0.3)))
    sim.finalize()
    sim.collisions.disable(low, high, torch.tensor([1]))
    for _ in range(100):
        sim.step()
    z = high.pose()[:, 2]
    assert abs(z[0].item() - 0.12) < 0.005          # env 0: rests on the low box
    assert abs(z[1].item() - 0.02) < 0.005          # env 1: fell through it onto the ground
    assert sim.contacts.is_touching(low, high).tolist() == [True, False]

    sim.collisions.enable(low, high, torch.tensor([1]))
    state = sim.get_state()
    state[1, 7 + 6 + 2] = 0.3                       # lift env 1's high box again (state: low, then high)
    sim.set_state(state)
    sim.forget_history()                            # separate mode: new PhysX systems keep the groups
    for _ in range(100):
        sim.step()
    assert abs(high.pose()[1, 2].item() - 0.12) < 0.005   # collides again
    sim.close()


def test_bad_pairs_are_refused():
    sim = SimScene(1, 100, render=False)
    a = sim.add_object("a", RigidObject([Box(0.05)], pose=(0, 0, 0.05)))
    pool = sim.add_object_pool("pool", lambda i, k: RigidObject([Box(0.02)], pose=(0.3, 0, 0.02)), size=2)
    sim.finalize()
    with pytest.raises(TypeError, match="object pools"):
        sim.collisions.disable(a, pool)
    with pytest.raises(ValueError, match="a and b must be different bodies"):
        sim.collisions.disable(a, a)
    with pytest.raises(TypeError, match="a must be an ActorView"):
        sim.collisions.disable(3, a)
    sim.close()
