"""The page in a real browser: Debian's chromium (installed by scripts/setup.sh), headless,
loads the viewer, and its screenshot shows the scene (not blank). No chromium is a
failure, never a skip: the viewer is for people's browsers. That poses follow the env is
checked on the server's scene graph (test_viewer.py), not here: whether a second page
load shows the new poses depended on the machine's load (a full run saw 0.03% of pixels
change where an idle one saw more than 0.2%)."""
from __future__ import annotations

import numpy as np
import pytest

from robosim.view import attach
from robosim.view.screenshot import browser_screenshot, find_chromium

pytestmark = pytest.mark.slow   # a headless page load with software WebGL: ~1 min on 2 cores

SIZE = (640, 480)


def screenshot(url: str, path) -> np.ndarray:
    if find_chromium() is None:
        pytest.fail("chromium is not installed: run `bash scripts/setup.sh` (Debian package chromium)", pytrace=False)
    return browser_screenshot(url, str(path), SIZE)


def test_the_page_shows_the_scene(env, port, tmp_path):
    env.reset(seed=0)
    viewer = attach(env, port=port)
    try:
        before = screenshot(viewer.url, tmp_path / "page.png")
    finally:
        viewer.close()
    assert before.shape == (SIZE[1], SIZE[0], 3)
    # not blank: the floor tiles, the white-and-black arm and the red cube make many distinct colours
    colours = np.unique(before.reshape(-1, 3) // 16, axis=0)
    assert len(colours) > 30 and before.std() > 10
    dark = (before.max(axis=2) < 80).mean()          # the arm's black joints, the labels' text
    assert dark > 0.0005
