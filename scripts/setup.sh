#!/usr/bin/env bash
# Idempotent set-up of robosim on a fresh Debian/Ubuntu-like machine:
#   1. a project venv in .venv (Python >= 3.10),
#   2. torch (CPU build pinned to 2.13.0 when no CUDA GPU is present),
#   3. robosim and its dependencies (editable) plus test extras,
#   4. a Vulkan driver SAPIEN accepts: lavapipe from Mesa >= 24.3 when no GPU driver
#      is present (Debian 12: from bookworm-backports),
#   5. Debian's chromium, which the viewer's browser test (tests/view) drives headless.
# Re-running is cheap: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
VENV=$ROOT/.venv

log() { printf '[robosim setup] %s\n' "$*"; }

# ---- 1. venv ---------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv in $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)

# ---- 2. torch ----------------------------------------------------------------
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    log "CUDA GPU found: installing torch==2.13.0 (CUDA build)"
  else
    log "no CUDA GPU: installing torch==2.13.0 (CPU build) before anything else pulls a CUDA build"
  fi
  "${PIP[@]}" "torch==2.13.0"
fi

# ---- 3. robosim + deps -----------------------------------------------------------
STAMP=$VENV/.robosim-setup-stamp
WANT=$(cat setup.cfg setup.py pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  log "installing robosim (editable) with test extras"
  "${PIP[@]}" -e ".[test]"
  echo "$WANT" > "$STAMP"
fi

# ---- 4. Vulkan driver ------------------------------------------------------------
vulkan_ok() {
  "$VENV/bin/python" - <<'PY' >/dev/null 2>&1
import sapien
sapien.render.RenderSystem()
PY
}
if vulkan_ok; then
  log "Vulkan rendering device found"
else
  log "no Vulkan device SAPIEN accepts: installing Mesa's lavapipe (>= 24.3)"
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    log "ERROR: need root and apt-get to install mesa-vulkan-drivers >= 24.3."
    log "Install a Vulkan driver yourself (GPU driver, or Mesa >= 24.3 lavapipe) and re-run."
    exit 1
  fi
  . /etc/os-release
  if [ "${VERSION_CODENAME:-}" = bookworm ]; then
    SRC=/etc/apt/sources.list.d/bookworm-backports.sources
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      cat > "$SRC" <<'SRCEOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRCEOF
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports \
      mesa-vulkan-drivers libvulkan1 >/dev/null
  else
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
  fi
  if vulkan_ok; then
    log "lavapipe installed: $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)"
  else
    log "ERROR: SAPIEN still finds no rendering device (Mesa must be >= 24.3; have $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || echo none))"
    exit 1
  fi
fi

# ---- 5. chromium for the viewer's browser test ---------------------------------------
if command -v chromium >/dev/null 2>&1; then
  log "chromium found"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  log "installing Debian's chromium (tests/view/test_browser.py loads the viewer in it)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  log "WARNING: no chromium and no root/apt-get: tests/view/test_browser.py will fail until chromium is installed"
fi
log "ready: $VENV"
