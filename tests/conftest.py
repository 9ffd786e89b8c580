"""Shared fixtures. Envs are expensive (~1 s to build): build them once per module."""
from __future__ import annotations

import random
import signal

import numpy as np
import pytest
import sapien
import torch

# A shell without job control starts background jobs with SIGINT ignored, and an ignored
# signal stays ignored across exec: the signal tests' children (robosim eval, replay,
# demos generate) would then never see their Ctrl-C and the tests would wait for them.
# A handler (not an ignore) is reset to the default in every child the suite starts.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def vulkan_device():
    """Every env owns render worlds, so the suite needs a Vulkan device. Fail loudly
    (never skip) when it is missing: run scripts/setup.sh to install lavapipe."""
    try:
        sapien.render.RenderSystem()
    except RuntimeError as err:  # pragma: no cover - only on broken machines
        pytest.fail(f"SAPIEN found no Vulkan device ({err}); run `bash scripts/setup.sh`", pytrace=False)


@pytest.fixture(autouse=True)
def seeded_global_generators():
    """Every test starts from the same global torch/numpy/random state, so a draw a test
    forgot to seed cannot make its outcome depend on the order or luck of a run."""
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
