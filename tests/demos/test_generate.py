"""`robosim demos generate`: only successful episodes, yield and cap, the header, exact
replay, and what an interrupted run leaves behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import h5py
import pytest

import robosim
from robosim.cli import main
from robosim.record import TrajectoryFile, recover, replay
from tests.demos.conftest import SEED


def test_keeps_only_successful_episodes(demos):
    path, report = demos
    traj = TrajectoryFile(path, task_id="PickCube-v1")
    episodes = [traj.episode(k) for k in range(len(traj))]
    assert len(episodes) == report.kept == 3
    for e in episodes:
        assert e.success[-1] and e.terminated[-1] and e.complete
        assert not e.success[:-1].any()          # ends at its first success
        assert e.actions.shape == (e.length, 7)
    seeds = [e.seed for e in episodes]
    assert len(set(seeds)) == 3 and all(SEED <= s < SEED + report.tried for s in seeds)
    assert report.tried >= 3 and report.successes >= 3 and not report.cap_hit


def test_header_holds_the_full_configuration(demos):
    path, report = demos
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["demos"])
        env_kwargs = json.loads(f.attrs["env_spec"])
    env = robosim.make("PickCube-v1", num_envs=1)
    try:
        spec = env.randomization.spec
    finally:
        env.close()
    assert config == dict(task="PickCube-v1", robot="panda", control_mode="pd_ee_delta_pose", obs_mode="state",
                          task_params={}, randomization=spec, num_envs=2, seed=SEED, requested=3, max_tries=11,
                          generator="robosim demos generate", kept=3, tried=report.tried,
                          successes=report.successes, cap_hit=False, action_noise=0.0)
    assert env_kwargs["physics_isolation"] == "separate" and env_kwargs["robot"] == "panda"
    assert env_kwargs["seed"] == [SEED, SEED + 1]   # asset build seeds


def test_generated_file_replays_exactly(demos):
    report = replay(demos[0], mode="actions")
    assert report.episodes == 3 and report.exact


def test_cap_stops_a_task_that_cannot_succeed(tmp_path):
    # a 10 cm cube does not fit the Panda's 8 cm gripper: every try fails
    out = str(tmp_path / "cap.h5")
    code = main(["demos", "generate", "PickCube-v1", "-n", "1", "--num-envs", "2", "--max-tries", "2",
                 "--task-param", "cube_half_size=0.05", "--out", out])
    assert code == 1
    traj = TrajectoryFile(out)
    assert len(traj) == 0
    assert json.loads(traj.attrs["demos"])["cap_hit"] is True
    assert json.loads(traj.attrs["demos"])["tried"] == 2


@pytest.mark.parametrize("argv, message", [
    (["PickCube-v1", "-n", "0"], "num (-n) must be an int >= 1, got 0"),
    (["PickCube-v1", "-n", "-2"], "num (-n) must be an int >= 1, got -2"),
    (["NoSuchTask-v1", "-n", "2"], "TASK must be a registered task"),
    (["PickCube-v1", "-n", "2", "--control-mode", "pd_joint_pos"], "control_mode must be one the scripted"),
    (["PickCube-v1", "-n", "2", "--control-mode", "fly"], "control_mode must be one the scripted"),
    (["PickCube-v1", "-n", "2", "--robot", "koch"], "robot 'koch' cannot run PickCubeTask: the task needs a parallel"),
    (["PickCube-v1", "-n", "2", "--task-param", "size=3"], "does not take the keyword argument(s) ['size']"),
    (["PickCube-v1", "-n", "2", "--max-tries", "1"], "max_tries must be an int >= 2, got 1"),
    (["PickCube-v1", "-n", "2", "--obs-mode", "rgb", "--sensor-size", "0x0"],
     "sensor_configs (--sensor-size) must give the task valid cameras, got {'width': 0, 'height': 0}"),
    (["PickCube-v1", "-n", "2", "--sensor-size", "64x64"], "applies to camera obs modes"),
    (["PickObject-v1", "-n", "2", "--task-param", "pool_size=100000"], "pool_size must be in [1, 64]"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, capsys, argv, message):
    out = tmp_path / "d.h5"
    code = main(["demos", "generate", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("robosim demos generate: error: ") and message in err and err.count("\n") == 1
    assert os.listdir(tmp_path) == []


# The child is `robosim.cli.main` with TrajectoryWriter.add_episode patched to pause once
# PAUSE_AFTER episodes are on disk (it writes `paused`, then sleeps in Python, where the
# signal's handler runs). The test signals it only then, so neither a fast machine (the run
# could end first) nor a loaded one changes what is tested.
PAUSE_AFTER = 2
PAUSING_GENERATE = textwrap.dedent("""
    import os, sys, time
    from robosim.record.trajectory import TrajectoryWriter

    add_episode = TrajectoryWriter.add_episode

    def add_episode_then_pause(self, episode):
        add_episode(self, episode)
        if self.episodes_written == int(os.environ["PAUSE_AFTER"]):
            open(os.environ["PAUSED_FILE"], "w").close()
            while True:
                time.sleep(0.01)

    TrajectoryWriter.add_episode = add_episode_then_pause
    from robosim.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_interrupted_generation_leaves_no_final_file_and_recovers(tmp_path):
    out = tmp_path / "many.h5"
    paused = tmp_path.parent / f"{tmp_path.name}.paused"   # outside tmp_path: recover sees only the run's files
    env = dict(os.environ, PAUSE_AFTER=str(PAUSE_AFTER), PAUSED_FILE=str(paused))
    proc = subprocess.Popen([sys.executable, "-c", PAUSING_GENERATE, "demos", "generate", "PickCube-v1", "-n", "400",
                             "--num-envs", "2", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    try:
        while not paused.exists():
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 130, err.decode()[-500:]
    assert not out.exists()
    kept = sorted(n for d in os.listdir(tmp_path) if d.endswith(".parts")
                  for n in os.listdir(tmp_path / d) if n.startswith("episode_"))
    assert len(kept) == PAUSE_AFTER
    report = recover(str(tmp_path))
    assert [(dst, n) for _, dst, n in report.recovered] == [(str(out), len(kept))]
    traj = TrajectoryFile(str(out), task_id="PickCube-v1")
    assert all(traj.episode(k).success[-1] for k in range(len(traj)))
    header = json.loads(traj.attrs["demos"])   # as of the last recovered episode
    assert header["task"] == "PickCube-v1" and header["requested"] == 400 and header["kept"] == len(traj)
    seeds = [traj.episode(k).seed for k in range(len(traj))]
    assert len(set(seeds)) == len(seeds) and min(seeds) >= 0
