"""Shared helpers of the robot tests: one small SimScene per (robot, control mode)."""
from __future__ import annotations

import pytest

from robosim.agents import Robot, get_robot_spec
from robosim.sim import SimScene

N = 4


@pytest.fixture(autouse=True)
def restore_robot_registry(monkeypatch):
    """Robots a test registers do not outlive it (later tests list the shipped ones)."""
    import robosim.agents.registry as registry

    registry.ROBOTS.discover()
    monkeypatch.setattr(registry.ROBOTS, "entries", dict(registry.ROBOTS.entries))
    monkeypatch.setattr(registry.ROBOTS, "entry_points", dict(registry.ROBOTS.entry_points))


@pytest.fixture(scope="module")
def robot_scene(request):
    """A factory (robot name, control mode) -> (sim, robot), built once per module."""
    built: dict = {}

    def get(name: str, control_mode: str):
        if (name, control_mode) not in built:
            sim = SimScene(N, 100)
            sim.add_ground()
            robot = Robot(get_robot_spec(name), control_mode)
            robot.load(sim)
            built[(name, control_mode)] = (sim, robot)
        return built[(name, control_mode)]

    yield get
    for sim, _ in built.values():
        sim.close()
