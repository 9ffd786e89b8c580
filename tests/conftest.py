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


@pytest.fixture
def tmpfs(tmp_path):
    """tmpfs(options) -> a fresh tmpfs directory mounted with those mount options (e.g.
    "size=96k", "ro,size=64k"), unmounted after the test: a real full or read-only disk.
    Needs root (CI runs as root: there a missing root fails instead of skipping)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("mounting a tmpfs needs root; CI must run these tests as root")
        pytest.skip("mounting a tmpfs needs root")
    mounted = []

    def make(options: str):
        target = tmp_path / f"fs{len(mounted)}"
        target.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], check=True)
        mounted.append(target)
        return target

    yield make
    for target in mounted:
        subprocess.run(["umount", "-l", str(target)], check=False)
