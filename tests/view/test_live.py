"""The live run's controls, clicked through their viser handles (a browser click sets the
same values): pause, step, reset one env, reset all, the env shown, contact points."""
from __future__ import annotations

import numpy as np
import pytest

from robosim.view import attach
from robosim.view.live import Controls, run_live, zero_policy


@pytest.fixture
def live(env, port):
    viewer = attach(env, port=port, hz=1e6)   # a step takes far over 1 us: every step pushes
    controls = Controls(viewer, time_scale=0.0)
    yield viewer, controls
    viewer.close()


def click(button) -> None:
    button.value = True   # what viser does with a click from a browser


def test_a_run_pushes_the_steps(env, live):
    viewer, controls = live
    pushed = viewer.frames_pushed
    assert run_live(env, viewer, zero_policy(env), controls, max_steps=3) == 3
    assert env.elapsed_steps.tolist() == [3, 3]
    assert viewer.frames_pushed == pushed + 3


def test_paused_it_steps_only_when_asked(env, live):
    viewer, controls = live
    controls.pause.value = True
    click(controls.step_button)
    click(controls.step_button)
    assert run_live(env, viewer, zero_policy(env), controls, max_steps=2) == 2   # returns: two steps were asked
    assert env.elapsed_steps.tolist() == [2, 2]
    assert not controls.take_step()


def test_reset_one_env_then_all(env, live):
    viewer, controls = live
    controls.env_choice.value = 1

    def on_step(obs, action, reward, terminated, truncated, info):
        if int(env.elapsed_steps[0]) == 2:
            click(controls.reset_one_button)

    run_live(env, viewer, zero_policy(env), controls, max_steps=4, on_step=on_step)
    assert env.elapsed_steps.tolist() == [4, 2]   # env 1 restarted before step 3

    clicks = []

    def reset_all(obs, action, reward, terminated, truncated, info):
        if not clicks:   # once, after the first step
            clicks.append(True)
            click(controls.reset_all_button)

    run_live(env, viewer, zero_policy(env), controls, max_steps=3, on_step=reset_all)
    assert env.elapsed_steps.tolist() == [2, 2]


def test_show_one_env_and_contacts(env, live):
    viewer, controls = live
    controls.show.value = "env 1"
    assert [node.visible for node in viewer.env_nodes] == [False, True]
    controls.show.value = "all envs"
    assert [node.visible for node in viewer.env_nodes] == [True, True]
    controls.contacts.value = True
    run_live(env, viewer, zero_policy(env), controls, max_steps=1)
    assert all(node is not None and len(node.points) > 0 for node in viewer.contact_nodes)
    assert np.isfinite(viewer.contact_nodes[0].points).all()
