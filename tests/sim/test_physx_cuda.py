"""physx_cuda backend: what the CPU machine can check (the GPU suite, tests/gpu, run by
scripts/gpu_check.sh, covers the rest)."""
from __future__ import annotations

from pathlib import Path

import pytest
import sapien
import torch

import robosim
from robosim.sim import resolve_backend
from robosim.sim.gpu.physx_cuda import enable_physx_gpu, fetch_physx_gpu_library, physx_gpu_library
from robosim.sim.gpu.scene import scene_offsets

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour without CUDA")


@no_cuda
def test_auto_picks_cpu_without_cuda():
    assert resolve_backend("auto") == "physx_cpu"


@no_cuda
def test_physx_cuda_without_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="physx_cuda' needs a CUDA GPU"):
        robosim.make("PickCube-v1", num_envs=2, sim_backend="physx_cuda")
    with pytest.raises(ValueError, match="physx_cuda' needs a CUDA GPU"):
        enable_physx_gpu()
    assert not sapien.physx.is_gpu_enabled()


def test_physx_gpu_library_is_where_sapien_loads_it_from():
    lib = physx_gpu_library()
    assert lib == Path.home() / ".sapien" / "physx" / sapien.physx.version() / "libPhysXGpu_64.so"


def test_sub_scene_offsets_form_a_centred_grid():
    offsets = scene_offsets(5)      # side 3, centred on the middle cell, 4 m apart
    expected = torch.tensor([[-4.0, -4.0, 0.0], [0.0, -4.0, 0.0], [4.0, -4.0, 0.0],
                             [-4.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    assert torch.equal(offsets, expected)
    big = scene_offsets(16384)      # 128 x 128: every pair of envs at least 4 m apart
    assert len(torch.unique(big, dim=0)) == 16384 and big.abs().max() <= 4.0 * 64


def test_an_offline_library_fetch_fails_fast_and_says_where_to_put_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))           # never touch the real ~/.sapien
    with pytest.raises(RuntimeError) as err:
        fetch_physx_gpu_library("http://127.0.0.1:9/linux-so.zip", timeout=5)
    text = str(err.value)
    assert "libPhysXGpu_64.so" in text and "http://127.0.0.1:9/linux-so.zip" in text
    assert str(tmp_path / ".sapien" / "physx") in text and "unzip it into" in text
    assert not list((tmp_path / ".sapien").rglob("*.part"))     # nothing half-written left behind
