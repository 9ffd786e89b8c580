"""Keyboard teleoperation: the key buttons (clicked through their handles, what a browser
click sets) and the terminal keys (typed into a pipe, read without blocking by the
policy) move the TCP the commanded way, and an episode driven by keys records and
replays exactly under physics_isolation="separate"."""
from __future__ import annotations

import os

import numpy as np
import pytest

from robosim.cli import main
from robosim.demos.recorder import DemoRecorder
from robosim.record.replay import replay
from robosim.record.trajectory import TrajectoryFile
from robosim.view import attach
from robosim.view.keys import KEY_STEP, KeyButtons, TerminalKeys
from robosim.view.live import Controls, run_live
from robosim.view.teleop import CLOSED, OPEN, Teleop

EPISODE = 20


def tcp(env) -> np.ndarray:
    return env.robot.tcp_pose()[0, :3].numpy().astype(np.float64).copy()


def test_key_buttons_move_the_tcp_the_commanded_way(teleop_env, port):
    env = teleop_env
    viewer = attach(env, port=port)
    try:
        teleop = Teleop(viewer)
        buttons = KeyButtons(teleop)
        seen = {}

        def on_step(obs, action, reward, terminated, truncated, info):
            if int(env.elapsed_steps[0]) == 2:
                seen["start"] = tcp(env)
                for key in "qqqd":                   # +z three steps, -y one step
                    buttons.buttons[key].value = True
                buttons.buttons[" "].value = True    # the gripper
            if int(env.elapsed_steps[0]) == 14:
                seen["end"] = tcp(env)

        run_live(env, viewer, teleop.policy, Controls(viewer, time_scale=0.0), max_steps=14, on_step=on_step)
    finally:
        viewer.close()
    moved = seen["end"] - seen["start"]
    np.testing.assert_allclose(moved, [0.0, -KEY_STEP, 3 * KEY_STEP], atol=0.005)
    assert teleop.gripper == CLOSED


def test_terminal_keys_drive_and_the_episode_replays_exactly(teleop_env, port, tmp_path):
    env = teleop_env
    path = str(tmp_path / "keys.h5")
    read_end, write_end = os.pipe()
    viewer = attach(env, port=port)
    try:
        teleop = Teleop(viewer)
        keys = TerminalKeys(teleop, read_end)
        recorder = DemoRecorder(env, path, keep=lambda episode: True)
        seen = {}

        def on_step(obs, action, reward, terminated, truncated, info):
            step = int(env.elapsed_steps[0])
            if step == 2:
                seen["start"] = tcp(env)
                os.write(write_end, b"wwxs w")       # x is no key; net +2 steps along x, then close
            if step == 3:
                seen["read"] = seen.get("read", "") + keys.poll()   # all read by the policy already
            if step == EPISODE - 1:
                seen["end"] = tcp(env)

        run_live(recorder, viewer, keys.policy, Controls(viewer, time_scale=0.0), max_steps=EPISODE + 1,
                 on_step=on_step)
        recorder.close(close_env=False)
        os.close(write_end)
        assert keys.poll() == "" and keys.ended     # end of input
    finally:
        keys.close()
        os.close(read_end)
        viewer.close()
    assert seen["read"] == ""
    moved = seen["end"] - seen["start"]
    np.testing.assert_allclose(moved, [2 * KEY_STEP, 0.0, 0.0], atol=0.005)
    episode = TrajectoryFile(path).episode(0)
    assert episode.length == EPISODE
    grip = episode.actions[:, -1]
    assert (grip[:2] == OPEN).all() and (grip[2:] == CLOSED).all()   # typed after step 2, read by the third
    assert episode.actions[2, 0] > 0.1                                 # the move toward +x
    report = replay(path)
    assert report.exact, report.summary()


def test_a_terminal_gives_keys_without_enter_and_gets_its_mode_back(teleop_env, port):
    """On a real terminal (a pty) a key is read as typed, with no newline after it."""
    import termios

    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    viewer = attach(teleop_env, port=port)
    try:
        teleop_env.reset(seed=0)
        teleop = Teleop(viewer)
        keys = TerminalKeys(teleop, slave)
        start = np.array(teleop.gizmo.position)
        os.write(master, b"a")                    # canonical mode would hold this back until Enter
        assert keys.poll() == "a"
        np.testing.assert_allclose(np.array(teleop.gizmo.position) - start, [0.0, KEY_STEP, 0.0], atol=1e-6)
        keys.close()
        assert termios.tcgetattr(slave) == before
    finally:
        viewer.close()
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize("step", [0, -0.1, 2.0, "0.02"])
def test_bad_key_step(teleop_env, port, step):
    viewer = attach(teleop_env, port=port)
    try:
        with pytest.raises(ValueError, match="step"):
            KeyButtons(Teleop(viewer), step=step)
    finally:
        viewer.close()


def test_view_teleop_keys_reads_the_terminal(port, capsys, monkeypatch):
    read_end, write_end = os.pipe()
    os.write(write_end, b"qq ")
    os.close(write_end)
    with os.fdopen(read_end) as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        assert main(["view", "PickCube-v1", "--teleop", "keys", "--max-steps", "3", "--time-scale", "0",
                     "--port", str(port)]) == 0
    assert "keys w/s +x/-x" in capsys.readouterr().out
