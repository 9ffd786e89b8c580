"""Teleoperation: the gizmo is moved through its server-side handle (what a browser drag
sets), the TCP follows it, the gripper button toggles the gripper entry, and the
recorded episode replays exactly under physics_isolation="separate"."""
from __future__ import annotations

import numpy as np

from robosim.demos.recorder import DemoRecorder
from robosim.record.replay import replay
from robosim.record.trajectory import TrajectoryFile
from robosim.view import attach
from robosim.view.live import Controls, run_live
from robosim.view.teleop import CLOSED, OPEN, Teleop

EPISODE = 30


def test_the_tcp_follows_the_gizmo_and_the_episode_replays_exactly(teleop_env, port, tmp_path):
    env = teleop_env
    path = str(tmp_path / "teleop.h5")
    viewer = attach(env, port=port)
    try:
        controls = Controls(viewer, time_scale=0.0)
        teleop = Teleop(viewer)
        recorder = DemoRecorder(env, path, keep=lambda episode: True)
        seen: dict = {"steps": 0}

        def on_step(obs, action, reward, terminated, truncated, info):
            seen["steps"] += 1
            step = seen["steps"]   # of the whole run: the first episode's steps are 1..EPISODE
            if step == 2:     # a drag in the browser: 15 cm along +x, 4 cm down
                target = teleop.gizmo.position + np.array([0.15, 0.0, -0.04])
                teleop.gizmo.position = target
                seen["target"] = target
                seen["start"] = env.robot.tcp_pose()[0, :3].numpy().copy()
            if step == 5:
                teleop.gripper_button.value = True    # a click
            if step == EPISODE - 1:
                seen["end"] = env.robot.tcp_pose()[0, :3].numpy().copy()

        run_live(recorder, viewer, teleop.policy, controls, max_steps=EPISODE + 2, on_step=on_step)
        recorder.close(close_env=False)
    finally:
        viewer.close()
    before = np.linalg.norm(seen["target"] - seen["start"])
    after = np.linalg.norm(seen["target"] - seen["end"])
    assert before > 0.15 and after < 0.005          # it got there
    recorded = TrajectoryFile(path)
    assert len(recorded) == 1                        # the finished episode; the running one is not a demo
    episode = recorded.episode(0)
    assert episode.length == EPISODE
    grip = episode.actions[:, -1]
    assert (grip[:5] == OPEN).all() and (grip[6:] == CLOSED).all()
    assert episode.actions[2, 0] == 1.0               # 15 cm: clipped at the controller's 10 cm step
    report = replay(path)
    assert report.exact, report.summary()
