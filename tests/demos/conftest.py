"""Shared demos: one small generation run, reused by the generation, conversion and
rendering tests (building envs costs ~1 s each)."""
from __future__ import annotations

import pytest

from robosim.demos import generate_demos

SEED = 5


@pytest.fixture(scope="session")
def demos(tmp_path_factory):
    """(path, report) of 3 successful PickCube demos generated on 2 envs, seed 5."""
    path = str(tmp_path_factory.mktemp("demos") / "pick.h5")
    report = generate_demos("PickCube-v1", 3, path, num_envs=2, seed=SEED)
    return path, report
