"""Fixtures for the vector tests: the chasing example loaded as a module."""
from __future__ import annotations

import importlib.util
import os

import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "chasing_vec_env.py")


@pytest.fixture(scope="session")
def chasing():
    """examples/chasing_vec_env.py as a module (examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("chasing_vec_env", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
