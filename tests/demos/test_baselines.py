"""examples/bc.py and examples/diffusion_policy.py: a few gradient steps on tiny demo files,
checkpoints that `robosim eval --policy` runs with a video, and BC that learns Reach
better than random actions."""
from __future__ import annotations

import json
import os
import sys

import pytest
import torch

import robosim
from robosim.cli import main as robosim_main
from robosim.demos import generate_demos
from robosim.record.evaluate import evaluate
from robosim.record.policies import random as random_policy
from robosim.rollout.checkpoint import flatten_space_keys, load_policy

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import bc  # noqa: E402
import diffusion_policy  # noqa: E402

TINY = ["--steps", "4", "--eval-every", "2", "--eval-episodes", "2", "--eval-envs", "2", "--seed", "0"]


def _eval_cli(monkeypatch, tmp_path, checkpoint: str, policy: str) -> None:
    """`robosim eval PickCube-v1 --policy <policy>` with ROBOSIM_POLICY=checkpoint, from the repo root."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("ROBOSIM_POLICY", checkpoint)
    video = str(tmp_path / "eval.mp4")
    assert robosim_main(["eval", "PickCube-v1", "--policy", policy, "--episodes", "2", "--num-envs", "2",
                         "--video", video, "--render-size", "64x64"]) == 0
    assert os.path.getsize(video) > 0


def test_bc_checkpoint_runs_in_robosim_eval(demos, tmp_path, monkeypatch):
    out = str(tmp_path / "bc")
    summary = bc.main(["--demos", demos[0], "--out", out, "--obs-noise", "0.05", *TINY])
    assert summary["grad_steps"] == 4 and summary["demos"] == 3 and summary["demos_diverged"] == 0
    rows = json.load(open(os.path.join(out, "log.json")))["rows"]
    assert [r["env_steps"] for r in rows] == [0, 2, 4] and os.path.isfile(os.path.join(out, "curve.png"))
    env = robosim.make("PickCube-v1", num_envs=3)
    try:
        obs, _ = env.reset(seed=0)
        action = load_policy(os.path.join(out, "policy.pt"), env)(obs)
        assert action.shape == (3, 7) and action.dtype == torch.float32
    finally:
        env.close()
    _eval_cli(monkeypatch, tmp_path, os.path.join(out, "policy.pt"), "robosim.rollout.checkpoint:from_env_var")


def test_bc_refuses_a_negative_obs_noise(demos, capsys):
    with pytest.raises(SystemExit):
        bc.parse_args(["--demos", demos[0], "--obs-noise", "-0.1"])
    assert "--obs-noise must be >= 0, got -0.1" in capsys.readouterr().err


def _pick_cube_columns(*names: str) -> list[slice]:
    """The flat state-observation columns of PickCube-v1's state_dict entries `names`."""
    env = robosim.make("PickCube-v1", num_envs=1, obs_mode="state_dict")
    try:
        layout = flatten_space_keys(env.single_observation_space)
    finally:
        env.close()
    widths = [int(torch.tensor(shape).prod()) for _, shape in layout]
    start = {name: sum(widths[:k]) for k, (name, _) in enumerate(layout)}
    width = dict(zip(start, widths))
    return [slice(start[n], start[n] + width[n]) for n in names]


def _moved(obs: torch.Tensor, columns: slice, by: float) -> torch.Tensor:
    moved = obs.clone()
    moved[:, columns] += by
    return moved


def test_bc_ignore_obs_holds_the_named_entry_out_of_the_policy_input(demos, tmp_path):
    refused = r"--ignore-obs must name entries of PickCube-v1's observation .*'agent/qvell'"
    with pytest.raises(ValueError, match=refused):
        bc.main(["--demos", demos[0], "--out", str(tmp_path / "bad"), "--ignore-obs", "agent/qvell", *TINY])
    assert not os.path.exists(tmp_path / "bad")   # refused before a run starts
    out = str(tmp_path / "bc_ignore")
    bc.main(["--demos", demos[0], "--out", out, "--ignore-obs", "agent/qvel", *TINY])
    qpos, qvel = _pick_cube_columns("agent/qpos", "agent/qvel")
    env = robosim.make("PickCube-v1", num_envs=2)
    try:
        obs, _ = env.reset(seed=0)
        policy = load_policy(os.path.join(out, "policy.pt"), env)
        assert torch.equal(policy(_moved(obs, qvel, 1.0)), policy(obs))
        assert not torch.equal(policy(_moved(obs, qpos, 0.1)), policy(obs))
    finally:
        env.close()


def test_diffusion_policy_ignore_obs(demos, tmp_path, monkeypatch):
    out = str(tmp_path / "dp_ignore")
    diffusion_policy.main(["--demos", demos[0], "--out", out, "--hidden", "64", "--ignore-obs", "agent/qvel", *TINY])
    monkeypatch.setenv("ROBOSIM_POLICY", os.path.join(out, "policy.pt"))
    qpos, qvel = _pick_cube_columns("agent/qpos", "agent/qvel")
    env = robosim.make("PickCube-v1", num_envs=2)
    try:
        obs, _ = env.reset(seed=0)
        first = diffusion_policy.from_env_var(env)(obs)   # each load samples with the same seeded noise
        assert torch.equal(diffusion_policy.from_env_var(env)(_moved(obs, qvel, 1.0)), first)
        assert not torch.equal(diffusion_policy.from_env_var(env)(_moved(obs, qpos, 0.1)), first)
    finally:
        env.close()


def test_diffusion_policy_checkpoint_runs_in_robosim_eval(demos, tmp_path, monkeypatch):
    out = str(tmp_path / "dp")
    summary = diffusion_policy.main(["--demos", demos[0], "--out", out, "--hidden", "64", *TINY])
    assert summary["grad_steps"] == 4
    monkeypatch.setenv("ROBOSIM_POLICY", os.path.join(out, "policy.pt"))
    env = robosim.make("PickCube-v1", num_envs=3)
    try:
        obs, _ = env.reset(seed=0)
        policy = diffusion_policy.from_env_var(env)
        first = policy(obs)
        assert first.shape == (3, 7) and torch.isfinite(first).all()
        obs, *_ = env.step(first)
        assert not torch.equal(policy(obs), first)   # the queued chunk's next action
    finally:
        env.close()
    wrong = robosim.make("StackCube-v1", num_envs=1)
    try:
        with pytest.raises(ValueError, match="was trained on .*PickCube-v1"):
            diffusion_policy.from_env_var(wrong)
    finally:
        wrong.close()
    _eval_cli(monkeypatch, tmp_path, os.path.join(out, "policy.pt"), "examples.diffusion_policy:from_env_var")


def test_bc_on_twenty_reach_demos_beats_random_actions(tmp_path):
    path = str(tmp_path / "reach.h5")
    generate_demos("Reach-v1", 20, path, num_envs=2, seed=0)
    summary = bc.main(["--demos", path, "--out", str(tmp_path / "bc"), "--steps", "500", "--eval-every", "500",
                       "--eval-episodes", "20", "--eval-envs", "10", "--seed", "0"])
    env = robosim.make("Reach-v1", num_envs=10)
    try:
        random_success = evaluate(env, random_policy(env, seed=0), 20, seed=10_000).success_rate
    finally:
        env.close()
    # measured: 0.90 (18 of 20 episodes) against 0.10 for uniform random actions on the same seeds
    # (10 demos give 0.40: too few to cover the goal space)
    assert summary["final_success"] >= 0.7 and summary["final_success"] >= random_success + 0.5


def _dp_weights(demos, out, *flags: str) -> dict[str, torch.Tensor]:
    """The noise model's saved weights after one gradient step with `flags`."""
    diffusion_policy.main(["--demos", demos[0], "--out", out, "--hidden", "64", "--steps", "1", "--eval-every", "1",
                           "--eval-episodes", "1", "--eval-envs", "1", "--seed", "0", *flags])
    state = torch.load(os.path.join(out, "policy.pt"), weights_only=True)["state_dict"]
    return {k: v for k, v in state.items() if k.startswith("model.")}


def test_diffusion_policy_saves_the_weight_average_with_its_warm_up(demos, tmp_path):
    trained = _dp_weights(demos, str(tmp_path / "plain"))
    # after one step the decay is min(D, 1 - 2^-0.75) = min(D, 0.405): D = 0.9999 gives the warm-up's
    # 0.405, D = 0.2 gives 0.2; both are averages of the same initial and trained weights
    warm = _dp_weights(demos, str(tmp_path / "warm"), "--ema-decay", "0.9999")
    low = _dp_weights(demos, str(tmp_path / "low"), "--ema-decay", "0.2")
    warm_decay = 1 - 2 ** -0.75
    for key, weight in trained.items():
        initial = (warm[key] - (1 - warm_decay) * weight) / warm_decay
        assert not torch.allclose(initial, weight)          # one step moved every tensor
        torch.testing.assert_close(low[key], 0.2 * initial + 0.8 * weight, rtol=0, atol=1e-5)


def test_diffusion_policy_obs_noise_changes_training_and_bad_values_are_refused(demos, tmp_path, capsys):
    plain = _dp_weights(demos, str(tmp_path / "plain"))
    noisy = _dp_weights(demos, str(tmp_path / "noisy"), "--obs-noise", "0.05")
    assert any(not torch.equal(plain[k], noisy[k]) for k in plain)
    for flag, value, message in (("--obs-noise", "-0.1", "--obs-noise must be >= 0, got -0.1"),
                                 ("--ema-decay", "1.0", "--ema-decay must be in [0, 1), got 1.0")):
        with pytest.raises(SystemExit):
            diffusion_policy.parse_args(["--demos", demos[0], flag, value])
        assert message in capsys.readouterr().err


def test_diffusion_policy_without_obs_noise_draws_only_the_diffusion_step_and_noise():
    """What keeps runs made before --obs-noise repeatable: off, a loss draws from the
    training generator exactly the time steps and the noise it drew before; on, more."""
    cfg = {"obs_horizon": 2, "action_horizon": 8, "pred_horizon": 16, "ddim_steps": 10, "hidden": 32}
    model = diffusion_policy.DiffusionPolicy(torch.randn(50, 5), torch.randn(50, 2), cfg)
    obs, chunk = torch.randn(8, 2, 5), torch.randn(8, 16, 2)
    expected = torch.Generator().manual_seed(0)
    torch.randint(diffusion_policy.TRAIN_STEPS, (8,), generator=expected)
    torch.randn((8, 32), generator=expected)
    off, on = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    model.loss(obs, chunk, off, 0.0)
    model.loss(obs, chunk, on, 0.05)
    assert torch.equal(off.get_state(), expected.get_state())
    assert not torch.equal(on.get_state(), expected.get_state())
