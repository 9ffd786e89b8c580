"""`robosim demos render`: camera obs from recorded states, states left unchanged."""
from __future__ import annotations

import os

import h5py
import numpy as np
import pytest
import torch

from robosim.cli import main
from robosim.demos import generate_demos
from robosim.demos.render import render_demos
from robosim.envs import make_env
from robosim.record import TrajectoryFile

SENSORS = {"width": 32, "height": 24}


@pytest.fixture(scope="module")
def rendered(demos, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("render") / "rgbd.h5")
    return render_demos(demos[0], out, "rgbd", sensor_configs=SENSORS), out


def test_adds_shaped_camera_obs_and_keeps_everything_else(demos, rendered):
    report, path = rendered
    assert report.episodes == 3
    with h5py.File(demos[0], "r") as src, h5py.File(path, "r") as dst:
        assert {k: str(v) for k, v in src.attrs.items()}.items() <= {k: str(v) for k, v in dst.attrs.items()}.items()
        assert dst.attrs["obs_mode"] == "rgbd"
        for name in src:
            for field in src[name]:
                assert np.array_equal(src[name][field][()], dst[name][field][()])
            t1 = src[name]["states"].shape[0]
            cam = dst[name]["obs/sensor_data/base_camera"]
            assert cam["rgb"].shape == (t1, 24, 32, 3) and cam["rgb"].dtype == np.uint8
            assert cam["depth"].shape == (t1, 24, 32, 1) and cam["depth"].dtype == np.float32
            assert dst[name]["obs/sensor_param/base_camera/intrinsic_cv"].shape == (t1, 3, 3)
            assert not np.array_equal(cam["rgb"][0], cam["rgb"][-1])   # the robot moved


def test_frames_are_the_cameras_view_of_the_recorded_states(demos, rendered):
    traj = TrajectoryFile(demos[0])
    episode = traj.episode(1)
    env = make_env(traj.spec, num_envs=2, sensor_configs=SENSORS, obs_mode="rgbd")
    try:
        t = episode.length // 2
        env.set_state(torch.from_numpy(episode.states[t]).unsqueeze(0), env_idx=[episode.env_index])
        expected = env.cameras.sensors.capture(("rgb",))["base_camera"]["rgb"][episode.env_index].numpy()
    finally:
        env.close()
    with h5py.File(rendered[1], "r") as f:
        assert np.array_equal(f[traj.episode_names[1]]["obs/sensor_data/base_camera/rgb"][t], expected)


def test_bad_obs_mode_is_refused(demos, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:   # argparse's own check of --obs-mode choices
        main(["demos", "render", demos[0], "--obs-mode", "smell", "--out", str(tmp_path / "r.h5")])
    assert exit_.value.code == 2 and "invalid choice: 'smell'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="obs_mode must be one of"):
        render_demos(demos[0], str(tmp_path / "r.h5"), "state")
    assert os.listdir(tmp_path) == []


def test_generate_with_a_camera_obs_mode_renders_into_its_own_file(tmp_path):
    out = tmp_path / "cam.h5"
    report = generate_demos("PickCube-v1", 1, str(out), num_envs=1, seed=3, obs_mode="rgb", sensor_configs=SENSORS)
    assert report.kept == 1 and os.listdir(tmp_path) == ["cam.h5"]   # replaced in place, no leftovers
    traj = TrajectoryFile(str(out))
    with h5py.File(out, "r") as f:
        assert f.attrs["obs_mode"] == "rgb"
        rgb = f[traj.episode_names[0]]["obs/sensor_data/base_camera/rgb"]
        assert rgb.shape == (traj.episode(0).length + 1, 24, 32, 3)
