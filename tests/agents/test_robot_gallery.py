"""examples/robot_gallery.py renders every shipped robot into one PNG, as a user runs it."""
from __future__ import annotations

import os
import subprocess
import sys

import imageio.v2 as imageio
import pytest

pytestmark = pytest.mark.slow   # renders every robot in a subprocess: ~65 s

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "robot_gallery.py")


def test_gallery_png_has_one_rendered_tile_per_robot(tmp_path):
    out = tmp_path / "robots.png"
    result = subprocess.run([sys.executable, SCRIPT, str(out), "--size", "96"], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    image = imageio.imread(out)
    robots = result.stdout.strip().split("(")[-1].rstrip(")").split(", ")   # what the fresh process lists
    assert set(robots) >= {"koch", "panda", "so100", "xarm7"}
    assert image.shape[0] == 96 and image.shape[2] == 3
    assert image.shape[1] >= 96 * len(robots)
    for k in range(len(robots)):
        tile = image[30:, k * 98:k * 98 + 96].astype(float)   # below the label
        assert tile.std() > 10, f"tile {k} ({robots[k]}) looks empty"
