"""`robosim eval`: exactly N episodes, honest statistics, a video, early errors."""
from __future__ import annotations

import os

import imageio
import pytest
import torch

import robosim
from robosim.cli import main
from robosim.record.evaluate import evaluate, load_policy_factory, wilson_interval
from robosim.record.policies import scripted


def test_wilson_interval_matches_the_formula():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-3) and high == pytest.approx(0.9433, abs=1e-3)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_evaluate_counts_exactly_the_requested_episodes():
    env = robosim.make("Reach-v1", num_envs=2, max_episode_steps=6)
    try:
        result = evaluate(env, lambda obs: torch.zeros(2, *env.single_action_space.shape), episodes=3, seed=4)
        # zero actions never reach the goal: every episode runs to truncation
        assert result.episodes == 3 and result.lengths == [6, 6, 6]
        assert result.success == [False, False, False]
        assert len(result.returns) == 3 and all(r == r for r in result.returns)  # finite sums
        assert "0.0% (0/3)" in result.summary() and "95% CI" in result.summary()
        with pytest.raises(ValueError, match="episodes must be a positive int, got 0"):
            evaluate(env, lambda obs: None, episodes=0)
    finally:
        env.close()


def test_scripted_policy_succeeds_and_returns_are_sums_of_rewards():
    env = robosim.make("Reach-v1", num_envs=2)
    try:
        result = evaluate(env, scripted(env), episodes=2, seed=0)
        assert result.success == [True, True]
        assert all(length < env.max_episode_steps for length in result.lengths)
    finally:
        env.close()


def test_flags_say_which_stages_each_episode_reached():
    """PickCube's scripted policy grasps and places in every episode it solves; zero
    actions never grasp. The flags are per episode, in the order episodes ended."""
    env = robosim.make("PickCube-v1", num_envs=2)
    try:
        solved = evaluate(env, scripted(env), episodes=3, seed=0)
        idle = evaluate(env, lambda obs: torch.zeros(2, *env.single_action_space.shape), episodes=2, seed=0)
    finally:
        env.close()
    assert set(solved.flags) >= {"is_grasped", "is_obj_placed", "is_robot_static"}
    assert "success" not in solved.flags and "is_success" not in solved.flags and "fail" not in solved.flags
    assert all(len(v) == 3 for v in solved.flags.values())
    for k, success in enumerate(solved.success):
        assert not success or (solved.flags["is_grasped"][k] and solved.flags["is_obj_placed"][k])
    assert idle.flags["is_grasped"] == [False, False]
    grasped = sum(solved.flags["is_grasped"])
    assert f"ever is_grasped: {grasped / 3:.1%} ({grasped}/3)" in solved.summary()


@pytest.mark.parametrize("spec, message", [
    ("no_colon", "must look like 'module:callable'"),
    ("not_a_module_xyz:f", "cannot be imported"),
    ("robosim.record.policies:nope", "has no attribute 'nope'"),
    ("robosim.record.policies:__doc__", "must name a callable"),
])
def test_bad_policy_specs_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        load_policy_factory(spec)


def test_eval_command_prints_statistics_and_writes_a_video(tmp_path, capsys):
    video = tmp_path / "eval.mp4"
    code = main(["eval", "Reach-v1", "--episodes", "2", "--num-envs", "2", "--video", str(video),
                 "--trajectory", str(tmp_path / "eval.h5"), "--render-size", "48x32"])
    out = capsys.readouterr().out
    assert code == 0
    assert "success rate:   100.0% (2/2), 95% CI [34.2%, 100.0%] (Wilson)" in out
    assert "mean return:" in out and "episode length:" in out
    frames = [f for f in imageio.get_reader(str(video))]
    assert frames[0].shape == (32, 2 * 48 + 2, 3)
    assert sorted(os.listdir(tmp_path)) == ["eval.h5", "eval.mp4"]


@pytest.mark.parametrize("argv, message", [
    (["eval", "Nope-v1"], "task_id must be one of"),
    (["eval", "Reach-v1", "--video", "/nonexistent_dir/x.mp4"], "--video must be in an existing directory"),
    (["eval", "Reach-v1", "--trajectory", "{tmp}/t.csv"], "--trajectory must end with .h5"),
    (["eval", "Reach-v1", "--policy", "nothing_here:f"], "cannot be imported"),
    (["eval", "Reach-v1", "--episodes", "0"], "--episodes and --num-envs must be >= 1"),
    (["eval", "Reach-v1", "--render-size", "0x64"], "width must be an int in [1, 4096], got 0"),
    (["replay", "{tmp}/missing.h5"], "TRAJ must be an existing HDF5 file"),
])
def test_commands_reject_bad_arguments_before_simulating(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setattr(robosim, "make", lambda *a, **k: pytest.fail("an env was built"))
    code = main([a.format(tmp=tmp_path) for a in argv])
    assert code == 2
    assert message in capsys.readouterr().err
    assert os.listdir(tmp_path) == []
