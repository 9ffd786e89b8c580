"""Ctrl-C (SIGINT) or SIGTERM during `robosim replay --video` keeps a playable video of
every frame rendered so far, as the exit message says, and leaves nothing hidden.

Real subprocess, real signal. The child is `robosim.cli.main` behind a wrapper (below)
that makes VideoWriter pause after PAUSE_AFTER_FRAMES frames and write `paused`; the
test signals it only then, so the video provably holds exactly that many frames when
the signal arrives, however fast or loaded the machine is."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import imageio
import pytest
import torch

import robosim
from robosim.record import RecordEpisode, TrajectoryFile

pytestmark = pytest.mark.slow   # interrupted replay subprocesses: 20-40 s each

PAUSE_AFTER_FRAMES = 4
STEPS = 10
PAUSING_REPLAY = textwrap.dedent("""
    import os, sys, time
    from robosim.record.video import VideoWriter

    pause_after = int(os.environ["PAUSE_AFTER_FRAMES"])
    add_frame = VideoWriter.add_frame

    def add_frame_then_pause(self, frame):
        add_frame(self, frame)
        if self.frames_written == pause_after:
            open("paused", "w").close()
            while True:              # the signal's handler runs between these sleeps
                time.sleep(0.01)

    VideoWriter.add_frame = add_frame_then_pause
    from robosim.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory) -> str:
    """2 envs of Reach-v1, STEPS seeded random steps: one replay round of STEPS + 1 frames."""
    path = str(tmp_path_factory.mktemp("traj") / "run.h5")
    env = robosim.make("Reach-v1", num_envs=2)
    gen = torch.Generator().manual_seed(0)
    with RecordEpisode(env, trajectory=path) as rec:
        rec.reset(seed=0)
        for _ in range(STEPS):
            rec.step(torch.rand((2, env.single_action_space.shape[0]), generator=gen) * 2 - 1)
    assert len(TrajectoryFile(path)) == 2
    return path


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_replay_keeps_the_frames_rendered_so_far(tmp_path, trajectory, sig, status):
    child = subprocess.Popen([sys.executable, "-c", PAUSING_REPLAY, "replay", trajectory, "--mode", "states",
                              "--video", "replay.mp4", "--render-size", "32x32"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PAUSE_AFTER_FRAMES=str(PAUSE_AFTER_FRAMES)))
    try:
        while not (tmp_path / "paused").exists():
            assert child.poll() is None, f"replay ended before pausing: {child.communicate()}"
            time.sleep(0.05)
    finally:
        child.send_signal(sig)
        _, err = child.communicate(timeout=600)
    assert child.returncode == status, err[-2000:]
    assert f"interrupted by {signal.Signals(sig).name}; output files keep what was recorded" in err, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    with imageio.get_reader(str(tmp_path / "replay.mp4")) as reader:
        assert sum(1 for _ in reader) == PAUSE_AFTER_FRAMES
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]      # no partial mp4 or lock left
