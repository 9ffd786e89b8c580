#!/usr/bin/env bash
# One-command GPU check of robosim's physx_cuda backend (issue 11).
#
#   scripts/gpu_check.sh            set up, run the emulated GPU suite with every tensor on
#                                   CUDA, then the GPU suite (tests/gpu) in a fresh process
#                                   (device handling, CPU physics to CUDA tensors, cameras,
#                                   the real physx_cuda tests where the library is present),
#                                   then the physx_cuda benchmark rows
#   scripts/gpu_check.sh --pack     on a machine WITH internet: build .gpu/, the offline
#                                   bundle a GPU machine without internet installs from
#   scripts/gpu_check.sh --no-bench skip the benchmark
#
# Without a CUDA GPU (CI, the project machine) it prints why and exits 0: nothing to run.
#
# Set-up on the GPU machine, in this order:
#   1. Python packages: robosim's own deps if `import sapien, mani_skill, gymnasium,
#      trimesh` fails: from PyPI when it answers (pip install --target .gpu/site), else
#      from the offline bundle .gpu/site.tar.xz (sapien 3.0.3 and the pure-Python deps as
#      wheels unpacked, plus a slim mani_skill: its package code and the Panda assets
#      only, 42 MB packed instead of the 101 MB wheel).
#   2. SAPIEN's PhysX GPU library (libPhysXGpu_64.so, which sapien.physx.enable_gpu()
#      would otherwise download with no timeout): from GitHub when it answers, else
#      from .gpu/physx-linux-so.zip if the bundle has it. Without it the physx_gpu
#      tests are SKIPPED with the reason and the benchmark reports it.
#   0. Vulkan loader (cameras): if ldconfig knows no libvulkan and .gl/*.deb exist,
#      they are unpacked into / (the device machines' documented recipe).
# Output: everything is printed and also written to ${GPU_CHECK_OUT:-.gpu/out}/.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
BUNDLE=$ROOT/.gpu
OUTDIR=${GPU_CHECK_OUT:-$BUNDLE/out}
PYVER=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
SAPIEN_PIN=sapien==3.0.3
MS_PIN=mani-skill==3.0.1
log() { printf '[gpu_check] %s\n' "$*"; }
online() { timeout 8 "$PY" - "$1" <<'PY' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=5)
PY
}
physx_version() { "$PY" -c 'import sapien.physx as p; print(p.version())'; }

# ---- --pack: build the offline bundle ------------------------------------------------
if [ "${1:-}" = "--pack" ]; then
  TARGET_PY=${TARGET_PY:-3.12}
  TMP=$(mktemp -d)
  mkdir -p "$BUNDLE" "$TMP/whl" "$TMP/site"
  log "downloading wheels for CPython $TARGET_PY (manylinux x86_64)"
  plats=(); for n in 17 24 27 28 31 34 35; do plats+=(--platform "manylinux_2_${n}_x86_64"); done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$TARGET_PY" --implementation cp \
    "${plats[@]}" --platform manylinux2014_x86_64 -d "$TMP/whl" \
    "$SAPIEN_PIN" gymnasium==1.4.0 trimesh==5.2.0 fast-simplification farama-notifications cloudpickle \
    transforms3d dacite "$MS_PIN" || exit 1
  for w in "$TMP"/whl/*.whl; do case "$w" in *mani_skill*) ;; *) (cd "$TMP/site" && unzip -qo "$w") ;; esac; done
  # slim mani_skill: package __init__ + logging utils + the Panda URDF and meshes
  (cd "$TMP" && unzip -qo whl/mani_skill-*.whl 'mani_skill/__init__.py' 'mani_skill/utils/logging_utils.py' \
     'mani_skill/assets/robots/panda/panda_v2.urdf' 'mani_skill/assets/robots/panda/franka_description/*' -d ms)
  mkdir -p "$TMP/ms/mani_skill/envs" && touch "$TMP/ms/mani_skill/envs/__init__.py" "$TMP/ms/mani_skill/utils/__init__.py"
  cp -r "$TMP/ms/mani_skill" "$TMP/site/"
  tar cJf "$BUNDLE/site.tar.xz" -C "$TMP/site" . && log "wrote $BUNDLE/site.tar.xz ($(du -h "$BUNDLE/site.tar.xz" | cut -f1))"
  # the other registered robots' assets, from this machine's mani_skill (11 MB packed; the
  # bundle, these and the tree fit the device machine's 64 MiB transfer)
  MS_DIR=$("$PY" -c 'import mani_skill, os; print(os.path.dirname(mani_skill.__file__))')
  tar cJf "$BUNDLE/robots.tar.xz" -C "$MS_DIR/.." \
    mani_skill/assets/robots/{allegro,dclaw,fetch,koch,so100,xarm7} \
    && log "wrote $BUNDLE/robots.tar.xz ($(du -h "$BUNDLE/robots.tar.xz" | cut -f1))"
  ver=$("$PY" -c 'import sapien.physx as p; print(p.version())' 2>/dev/null || echo 105.1-physx-5.3.1.patch0)
  url="https://github.com/sapien-sim/physx-precompiled/releases/download/$ver/linux-so.zip"
  if online "$url" && "$PY" -c "import urllib.request,sys; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" \
       "$url" "$BUNDLE/physx-linux-so.zip"; then
    log "wrote $BUNDLE/physx-linux-so.zip"
  else
    log "could not fetch $url: the bundle has no PhysX GPU library (physx_cuda tests will skip offline)"
  fi
  rm -rf "$TMP"
  exit 0
fi
BENCH=1; [ "${1:-}" = "--no-bench" ] && BENCH=0

# ---- CI / no GPU: nothing to run --------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  log "SKIPPED: no NVIDIA GPU on this machine (nvidia-smi finds none); the GPU suite runs on a GPU machine"
  exit 0
fi
mkdir -p "$OUTDIR"
exec > >(tee "$OUTDIR/gpu_check.log") 2>&1
log "$(date -u +%FT%TZ) on $(nvidia-smi -L | head -1)"

# ---- 0. Vulkan loader (before sapien is imported) -------------------------------------------------------------------
if ! ldconfig -p 2>/dev/null | grep -q libvulkan && ls "$ROOT"/.gl/*.deb >/dev/null 2>&1; then
  log "no libvulkan known to ldconfig: unpacking .gl/*.deb"
  for f in "$ROOT"/.gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi

# the NVIDIA driver's Vulkan ICD and EGL vendor files, where the device image keeps them
# outside the loader's default search path (else SAPIEN's renderer: ErrorIncompatibleDriver)
NV=/usr/local/nvidia/share
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$NV/vulkan/icd.d/nvidia_icd.json" ]; then
  export VK_DRIVER_FILES=$NV/vulkan/icd.d/nvidia_icd.json; log "Vulkan ICD: $VK_DRIVER_FILES"
fi
if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f "$NV/glvnd/egl_vendor.d/10_nvidia.json" ]; then
  export __EGL_VENDOR_LIBRARY_FILENAMES=$NV/glvnd/egl_vendor.d/10_nvidia.json
fi

# ---- 1. Python packages ------------------------------------------------------------------
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
have_deps() { "$PY" -c 'import sapien, mani_skill, gymnasium, trimesh, robosim_tasks, robosim' >/dev/null 2>&1; }
if ! have_deps; then
  SITE=$BUNDLE/site; mkdir -p "$SITE"
  # robosim from this checkout: link the import names setup.py maps onto folders
  "$PY" - "$SITE" <<'PY'
import ast, os, sys
for node in ast.walk(ast.parse(open("setup.py").read())):
    if isinstance(node, ast.keyword) and node.arg == "package_dir":
        for name, folder in zip(node.value.keys, node.value.values):
            link = os.path.join(sys.argv[1], name.value)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(os.path.abspath(folder.value), link)
PY
  export PYTHONPATH=$SITE:$PYTHONPATH
  if ! have_deps && online https://pypi.org/simple/sapien/; then
    log "installing $SAPIEN_PIN $MS_PIN and deps from PyPI into $SITE"
    "$PY" -m pip install -q --target "$SITE" "$SAPIEN_PIN" "$MS_PIN" "gymnasium>=1.0,<2" "trimesh>=4" fast-simplification
  fi
  if ! have_deps && [ -f "$BUNDLE/site.tar.xz" ]; then
    log "offline: unpacking the bundle $BUNDLE/site.tar.xz into $SITE"
    tar xJf "$BUNDLE/site.tar.xz" -C "$SITE"
    [ -f "$BUNDLE/robots.tar.xz" ] && tar xJf "$BUNDLE/robots.tar.xz" -C "$SITE"
  fi
fi
if ! have_deps; then
  "$PY" -c 'import sapien, mani_skill, gymnasium, trimesh, robosim_tasks' 2>&1 | tail -3
  log "FAILED: the imports above fail, and neither PyPI nor $BUNDLE/site.tar.xz provided them"; exit 1
fi
"$PY" -c 'import sys, torch, sapien; print(f"python {sys.version.split()[0]}, torch {torch.__version__}, sapien {sapien.__version__}, cuda {torch.cuda.is_available()}")'

# ---- 2. PhysX GPU library ------------------------------------------------------------------
VER=$(physx_version)
LIBDIR=$HOME/.sapien/physx/$VER
if [ ! -f "$LIBDIR/libPhysXGpu_64.so" ]; then
  URL="https://github.com/sapien-sim/physx-precompiled/releases/download/$VER/linux-so.zip"
  mkdir -p "$LIBDIR"
  if [ -f "$BUNDLE/physx-linux-so.zip" ]; then
    log "PhysX GPU library from the bundle"; (cd "$LIBDIR" && unzip -qo "$BUNDLE/physx-linux-so.zip")
  elif online "$URL"; then
    log "downloading the PhysX GPU library from $URL"
    "$PY" -c "import urllib.request,sys; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" "$URL" "$LIBDIR/linux-so.zip" \
      && (cd "$LIBDIR" && unzip -qo linux-so.zip)
  fi
fi
if [ -f "$LIBDIR/libPhysXGpu_64.so" ]; then log "PhysX GPU library: $LIBDIR/libPhysXGpu_64.so"
else log "PhysX GPU library MISSING at $LIBDIR (offline and not in the bundle): physx_cuda tests will be skipped"; fi

# ---- 3. the emulated GPU system with every buffer on CUDA (no PhysX GPU library needed) -----
log "emulated suite: physx_gpu_emulated with sim_device=cuda (the GPU code path, CUDA tensors, CPU PhysX)"
ROBOSIM_TEST_SIM_DEVICE=cuda "$PY" -m pytest -p no:cacheprovider -q -rs \
  tests/sim/test_gpu_emulation.py tests/sim/test_gpu_render_rules.py tests/envs/test_emulated_backend.py 2>&1 \
  | tee "$OUTDIR/pytest_emulated_cuda.txt"
EMULATED=${PIPESTATUS[0]}

# ---- 4. GPU suite: a fresh process, nothing else imported first ----------------------------------
log "GPU suite: pytest tests/gpu (skips are listed with their reasons)"
"$PY" -m pytest -p no:cacheprovider -v -rs tests/gpu 2>&1 | tee "$OUTDIR/pytest_gpu.txt"
SUITE=${PIPESTATUS[0]}
[ "$SUITE" = 0 ] && SUITE=$EMULATED

# ---- benchmark rows on physx_cuda (each case in its own process) --------------------------------
if [ "$BENCH" = 1 ] && [ ! -f "$LIBDIR/libPhysXGpu_64.so" ]; then
  log "bench SKIPPED: physx_cuda cannot run without the PhysX GPU library (see above)"
elif [ "$BENCH" = 1 ]; then
  log "bench: robosim vs ManiSkill3 PickCube-v1 on physx_cuda, N = 1024 4096 16384"
  "$PY" - "$OUTDIR/bench_cuda.json" <<'PY' 2>&1 | tee "$OUTDIR/bench_cuda.txt"
import sys
from robosim.bench.runner import BenchConfig, format_cuda_report, run_cuda, write_json_atomic
try:   # the offline bundle's slimmed mani_skill registers no tasks: no ManiSkill3 rows then
    import gymnasium, mani_skill.envs  # noqa: F401
    maniskill = "PickCube-v1" in gymnasium.registry
except Exception:  # noqa: BLE001
    maniskill = False
print("ManiSkill3 rows:", "run" if maniskill else "not run (mani_skill registers no PickCube-v1 here)")
cfg = BenchConfig(repeats=3, sim_backends=("physx_cuda",), cuda_num_envs=(1024, 4096, 16384), maniskill=maniskill)
doc = run_cuda(cfg)
print(format_cuda_report(doc))
write_json_atomic(doc, sys.argv[1])
PY
fi
log "done: GPU suite exit code $SUITE; logs in $OUTDIR"
exit "$SUITE"
