"""The page in a real browser: Debian's chromium (installed by scripts/setup.sh), headless,
loads the viewer, and its screenshot shows the scene (not blank) and changes after the
env steps. No chromium is a failure, never a skip: the viewer is for people's browsers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from robosim.view import attach
from robosim.view.screenshot import browser_screenshot, find_chromium

pytestmark = pytest.mark.slow   # two headless page loads with software WebGL: ~1 min each on 2 cores

SIZE = (640, 480)


def screenshot(url: str, path) -> np.ndarray:
    if find_chromium() is None:
        pytest.fail("chromium is not installed: run `bash scripts/setup.sh` (Debian package chromium)", pytrace=False)
    return browser_screenshot(url, str(path), SIZE)


def test_the_page_shows_the_scene_and_follows_a_step(env, port, tmp_path):
    env.reset(seed=0)
    viewer = attach(env, port=port)
    try:
        before = screenshot(viewer.url, tmp_path / "before.png")
        action = torch.zeros(env.action_space.shape)
        action[:, 0], action[:, 2] = 1.0, 1.0     # the arm reaches forward and up
        for _ in range(8):
            env.step(action)
        viewer.update(force=True)
        after = screenshot(viewer.url, tmp_path / "after.png")
    finally:
        viewer.close()
    assert before.shape == (SIZE[1], SIZE[0], 3)
    # not blank: the floor tiles, the white-and-black arm and the red cube make many distinct colours
    colours = np.unique(before.reshape(-1, 3) // 16, axis=0)
    assert len(colours) > 30 and before.std() > 10
    dark = (before.max(axis=2) < 80).mean()          # the arm's black joints, the labels' text
    assert dark > 0.0005
    changed = np.abs(before.astype(np.int16) - after.astype(np.int16)).max(axis=2) > 40
    assert changed.mean() > 0.002, changed.mean()   # the arm moved on the page
