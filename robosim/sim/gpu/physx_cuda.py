"""GPU PhysX for backend `physx_cuda`: SAPIEN's PhysX GPU library and enabling it.

The scene and views that drive the GPU system are robosim.sim.gpu.scene (shared with
the emulated backend). Here: SAPIEN 3.0.3 loads `libPhysXGpu_64.so` from
~/.sapien/physx/<version>/ when `sapien.physx.enable_gpu()` runs, and that call must
come before any PhysX object exists in the process (else "GPU PhysX can only be
enabled once before any other code involving PhysX"). SAPIEN downloads the library on
first use with no timeout; robosim fetches it itself, with a timeout, and when that
fails says which file to put where.
"""
from __future__ import annotations

import platform
import shutil
import urllib.request
import zipfile
from pathlib import Path

import sapien
import torch

_LIB_URL = "https://github.com/sapien-sim/physx-precompiled/releases/download/{v}/linux-so.zip"


def physx_gpu_library() -> Path:
    """Where SAPIEN 3.0.3 loads its PhysX GPU library from (~/.sapien/physx/<version>)."""
    return Path.home() / ".sapien" / "physx" / sapien.physx.version() / "libPhysXGpu_64.so"


def physx_gpu_library_url() -> str:
    return _LIB_URL.format(v=sapien.physx.version())


FETCH_TIMEOUT_S = 120.0   # SAPIEN's own download has none: a silent hang offline


def fetch_physx_gpu_library(url: str | None = None, timeout: float = FETCH_TIMEOUT_S) -> Path:
    """Download and unpack SAPIEN's PhysX GPU library where SAPIEN loads it from (what
    SAPIEN does on first use, with a timeout). RuntimeError naming the file, the URL and
    the directory to unzip it into when the download fails (an offline machine)."""
    lib = physx_gpu_library()
    url = physx_gpu_library_url() if url is None else url
    lib.parent.mkdir(parents=True, exist_ok=True)
    archive = lib.parent / "linux-so.zip.part"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(archive, "wb") as out:
            shutil.copyfileobj(response, out)
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(lib.parent)
    except (OSError, zipfile.BadZipFile, ValueError) as err:
        raise RuntimeError(
            f"physx_cuda needs SAPIEN's PhysX GPU library {lib.name} at {lib}, which is missing, and fetching it "
            f"from {url} failed ({type(err).__name__}: {err}): on a machine with internet access download that "
            f"zip and unzip it into {lib.parent} (scripts/gpu_check.sh --pack bundles it)") from None
    finally:
        archive.unlink(missing_ok=True)
    if not lib.exists():
        raise RuntimeError(f"{url} unpacked into {lib.parent} but holds no {lib.name}")
    return lib


def enable_physx_gpu(fetch: bool = True) -> None:
    """Enable GPU PhysX for this process, or raise a RuntimeError/ValueError saying why
    it cannot and what to do. Idempotent. fetch=False: a missing library is an error
    at once instead of a download (up to FETCH_TIMEOUT_S)."""
    if sapien.physx.is_gpu_enabled():
        return
    if not torch.cuda.is_available():
        raise ValueError("sim_backend 'physx_cuda' needs a CUDA GPU; none is visible to torch (use 'physx_cpu')")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise RuntimeError(f"physx_cuda is supported on Linux x86_64 only, "
                           f"got {platform.system()} {platform.machine()}")
    lib = physx_gpu_library()
    if not lib.exists():
        if not fetch:
            raise RuntimeError(f"physx_cuda needs SAPIEN's PhysX GPU library at {lib}, which is missing "
                               f"(download {physx_gpu_library_url()} and unzip it into {lib.parent})")
        fetch_physx_gpu_library()
    try:
        sapien.physx.enable_gpu()
    except OSError as err:    # the library or the CUDA driver (libcuda.so) does not load
        raise RuntimeError(f"GPU PhysX could not be enabled: {lib} or the CUDA driver it needs does not "
                           f"load ({err})") from err
    except RuntimeError as err:
        if "only be enabled once" in str(err):
            raise RuntimeError(
                "physx_cuda must be the first use of PhysX in this process, but a PhysX object already "
                "exists (any physx_cpu env, even a closed one, keeps PhysX alive): build the physx_cuda env "
                "before any physx_cpu env, or in a fresh process") from err
        raise


_AUTO: dict[str, bool] = {}


def cuda_backend_usable() -> bool:
    """True when physx_cuda works in this process: a CUDA GPU, the PhysX GPU library in
    place, and GPU PhysX enabled (this call enables it if no PhysX object exists yet).
    Never downloads the library: `auto` must not wait on the network."""
    if "ok" not in _AUTO:
        try:
            enable_physx_gpu(fetch=False)
            _AUTO["ok"] = True
        except (RuntimeError, ValueError):
            _AUTO["ok"] = False
    return _AUTO["ok"]
