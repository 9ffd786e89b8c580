"""robosim's own asset data, installed with the package (import name `robosim_assets`).

Data files only: generated object meshes, robot configuration files and procedural
object descriptions such as `cabinet.json` (the OpenDrawer-v1 cabinet).
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent


def asset_path(name: str) -> Path:
    """Path of the asset file `name` (relative to this directory); ValueError if absent."""
    path = ROOT / name
    if not path.is_file():
        raise ValueError(f"asset name must be a file under {ROOT}, got {name!r}")
    return path
