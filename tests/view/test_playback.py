"""robosim.view.playback: a recorded file plays from its states (set_state, no physics),
the timeline and the episode choice move it, a file that is not a trajectory is refused."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import robosim
from robosim.record.wrapper import RecordEpisode
from robosim.view.playback import Playback


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("traj") / "run.h5")
    env = robosim.make("PickCube-v1", num_envs=2, max_episode_steps=6)
    with RecordEpisode(env, trajectory=path) as rec:
        rec.reset(seed=[3, 4])
        action = torch.zeros(rec.action_space.shape)
        action[:, 0] = 1.0   # the arm moves: every recorded state differs
        for _ in range(6):
            rec.step(action)
        rec.reset(seed=[5, 6])
    return path


@pytest.fixture
def playback(trajectory, port):
    p = Playback(trajectory, port=port)
    yield p
    p.close()


def test_states_are_written_and_shown(playback):
    assert len(playback.file) == 2
    for episode in range(2):
        for t in (0, 3, 6):
            playback.show(episode, t)
            recorded = playback.file.episode(episode)
            i = recorded.env_index
            np.testing.assert_array_equal(playback.env.get_state()[i].numpy(), recorded.states[t])
            cube = playback.env.sim.actors["cube"].pose()[i].numpy()
            np.testing.assert_allclose(playback.viewer.body_pose(i, "cube")[:3], cube[:3], atol=1e-6)
            assert [n.visible for n in playback.viewer.env_nodes] == [k == i for k in range(2)]


def test_the_timeline_and_episode_choice_move_it(playback):
    playback.playing.value = False
    playback.timeline.value = 4            # a browser drags the slider
    assert playback.play(max_frames=1) == 1
    assert (playback.episode_index, playback.t) == (0, 4)
    playback.episode_choice.value = playback.episode_choice.options[1]
    playback.play(max_frames=1)
    assert (playback.episode_index, playback.t) == (1, 0)
    playback.playing.value = True          # playing advances one state per frame, looping
    playback.play(max_frames=2)
    assert playback.t == 2
    assert playback.timeline.value == 2


def test_camera_frustums_toggle(playback):
    playback.playing.value = False
    playback.frustums.value = True         # a browser ticks the box: drawn on the next frame, also paused
    playback.play(max_frames=1)
    names = set(playback.viewer.server.scene._handle_from_node_name)
    assert {f"/env{i}/cameras/base_camera" for i in range(2)} <= names
    playback.frustums.value = False
    playback.play(max_frames=1)
    assert not any("/cameras/" in name for name in playback.viewer.server.scene._handle_from_node_name)


def test_a_file_that_is_not_a_trajectory(tmp_path, port):
    bad = tmp_path / "notes.h5"
    bad.write_text("not hdf5")
    with pytest.raises(ValueError, match="--trajectory must be an HDF5 file written by robosim"):
        Playback(str(bad), port=port)
    with pytest.raises(ValueError, match="--trajectory must be an existing HDF5 file"):
        Playback(str(tmp_path / "missing.h5"), port=port)
