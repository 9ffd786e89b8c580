"""examples/rlpd.py: demo transitions re-simulated in the learner's env, symmetric
batches, the reverse curriculum driven by training episodes, and a checkpoint that
`robosim eval` runs on seeds the demos never used. Mechanics on a few hundred env steps;
learning is tests/rollout/test_rlpd_learning_steps.py."""
from __future__ import annotations

import json
import os
import sys

import pytest
import torch

from robosim.cli import main as robosim_main
from robosim.demos import generate_demos
from robosim.demos.starts import DemoStarts
from robosim.record import TrajectoryFile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import rlpd  # noqa: E402


@pytest.fixture(scope="module")
def push_demos(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("rlpd") / "push.h5")
    generate_demos("PushCube-v1", 3, path, num_envs=3, seed=0, action_noise=0.05)
    return path


def test_demo_transitions_are_the_demos_in_the_learners_reward(push_demos):
    starts = DemoStarts(push_demos)
    env = rlpd.make_env(TrajectoryFile(push_demos).spec, 2, "normalized_dense", 0)
    try:
        demos = rlpd.demo_transitions(env, starts, 0.05)
    finally:
        env.close()
    assert demos.size == sum(starts.lengths)
    # every demo ends in success: exactly one terminal transition per demo, paid 0; all others < 0
    assert int(demos.terminated.sum()) == len(starts)
    assert (demos.rewards[demos.terminated == 1] == 0).all() and (demos.rewards[demos.terminated == 0] < 0).all()
    # the labels are the recorded clean actions (the envs' steps interleaved), each once
    recorded = torch.cat([torch.from_numpy(e.actions) for e in starts.episodes])
    matches = (demos.actions[:, None, :] == recorded[None, :, :]).all(-1)
    assert (matches.sum(0) == 1).all() and (matches.sum(1) == 1).all()


def test_a_short_run_with_the_curriculum_saves_a_checkpoint_eval_runs(push_demos, tmp_path, monkeypatch, capsys):
    out = str(tmp_path / "run")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        summary = rlpd.main(["--demos", push_demos, "--curriculum", "--num-envs", "4", "--total-steps", "96",
                             "--learning-starts", "48", "--eval-every", "48", "--eval-episodes", "2",
                             "--eval-envs", "2", "--hidden", "32", "--stride", "1", "--window", "1",
                             "--threshold", "1.0", "--out", out])
        assert torch.get_num_threads() == 2   # the run used one (--torch-threads 1) and gave the caller's back
    finally:
        torch.set_num_threads(threads)
    assert summary["torch_threads"] == 1
    assert summary["env_steps"] == 96 and summary["demos"] == 3
    assert set(summary["cost_ms"]) == {"env_step", "act", "critic_update"}
    with open(os.path.join(out, "log.json")) as f:
        rows = json.load(f)["rows"]
    assert [r["env_steps"] for r in rows] == [0, 48, 96]
    assert len(summary["curriculum"]) == 3
    monkeypatch.setenv("ROBOSIM_POLICY", os.path.join(out, "policy.pt"))
    capsys.readouterr()
    assert robosim_main(["eval", "PushCube-v1", "--policy", "robosim.rollout.checkpoint:from_env_var",
                         "--episodes", "2", "--num-envs", "2"]) == 0
    out_text, err = capsys.readouterr()
    assert "(seed 3)" in out_text and "seeds from 3" in err   # past the demos' seeds 0, 1, 2


def test_bad_options_are_refused(capsys):
    for argv, message in ((["--critics", "2", "--critic-subset", "3"], "--critic-subset must be <="),
                          (["--utd", "0"], "--utd must be > 0"), (["--num-envs", "0"], "--num-envs must be >= 1")):
        with pytest.raises(SystemExit):
            rlpd.parse_args(["--demos", "x.h5", *argv])
        assert message in capsys.readouterr().err
