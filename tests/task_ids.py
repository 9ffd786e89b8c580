"""The task ids setup.cfg declares (its robosim.tasks entry points): the list every
every-task test covers, whatever else the registry of the test process holds (tests
register their own tasks)."""
from __future__ import annotations

import configparser
from pathlib import Path


def declared_tasks() -> list[str]:
    """Task ids in setup.cfg's order."""
    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).parents[1] / "setup.cfg")
    return [line.split("=")[0].strip() for line in cfg["options.entry_points"]["robosim.tasks"].strip().splitlines()]
