"""examples/ppo.py: its flags, the diagnostics it logs per update, --target-kl early
stopping, --profile and --video-every (which leave training unchanged), on tiny seeded
Reach-v1 runs (real physics)."""
from __future__ import annotations

import csv
import importlib.util
import json
import math
import os

import pytest

from robosim.record.video import mp4_is_complete

pytestmark = pytest.mark.slow   # training runs of examples/ppo.py: 11-115 s each

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "ppo.py")
DIAGNOSTICS = ("pg_loss", "v_loss", "entropy", "approx_kl", "old_approx_kl", "clipfrac", "explained_variance")
TINY = ["--num-envs", "4", "--num-steps", "8", "--total-steps", "256", "--eval-every", "256", "--eval-episodes", "2",
        "--seed", "0"]


@pytest.fixture(scope="module")
def ppo():
    spec = importlib.util.spec_from_file_location("example_ppo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def updates(out) -> list[dict[str, float]]:
    with open(out / "updates.csv") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def test_flags_fill_args_and_bad_values_are_refused(ppo):
    args = ppo.parse_args(["--import", "json", "--import", "csv", "--robot", "xarm7", "--num-envs", "8",
                           "--gae-lambda", "0.9", "--target-kl", "0.02", "--stop-success", "0.95", "--profile",
                           "--video-every", "5"])
    assert (args.imports, args.robot, args.num_envs, args.gae_lambda) == (["json", "csv"], "xarm7", 8, 0.9)
    assert (args.target_kl, args.stop_success, args.profile, args.video_every) == (0.02, 0.95, True, 5)
    defaults = ppo.parse_args([])
    assert (defaults.imports, defaults.robot, defaults.target_kl, defaults.profile, defaults.video_every) == (
        [], None, None, False, 0)
    for bad in (["--target-kl", "0"], ["--video-every", "-1"], ["--num-envs", "0"], ["--no-such-flag"]):
        with pytest.raises(SystemExit):
            ppo.parse_args(bad)


@pytest.fixture(scope="module")
def tiny_run(ppo, tmp_path_factory):
    """(out dir, summary) of a TINY run with every default flag."""
    out = tmp_path_factory.mktemp("tiny") / "run"
    return out, ppo.main([*TINY, "--out", str(out)])


def test_every_update_logs_finite_diagnostics(tiny_run):
    out, summary = tiny_run
    assert summary["env_steps"] == 256
    rows = updates(out)
    assert [int(r["iteration"]) for r in rows] == list(range(1, 9))   # 256 steps / (8 steps x 4 envs)
    assert [int(r["env_steps"]) for r in rows] == [32 * i for i in range(1, 9)]
    for row in rows:
        assert row["epochs"] == 4   # --target-kl is off by default
        for key in DIAGNOSTICS:
            assert math.isfinite(row[key]), (key, row)
        assert row["approx_kl"] >= 0 and 0 <= row["clipfrac"] <= 1 and row["explained_variance"] <= 1
    last_eval = json.load(open(out / "log.json"))["rows"][-1]
    assert {key: last_eval[key] for key in DIAGNOSTICS} == pytest.approx({key: rows[-1][key] for key in DIAGNOSTICS})


def test_target_kl_stops_the_epochs_of_every_update_early(ppo, tmp_path):
    target = 1e-6
    ppo.main([*TINY, "--lr", "0.01", "--out", str(tmp_path / "full")])
    ppo.main([*TINY, "--lr", "0.01", "--target-kl", str(target), "--out", str(tmp_path / "stopped")])
    full, stopped = updates(tmp_path / "full"), updates(tmp_path / "stopped")
    assert all(r["epochs"] == 4 for r in full)
    assert all(r["epochs"] == 1 for r in stopped)
    assert all(r["approx_kl"] > target for r in stopped)   # the reason each stopped
    assert all(math.isfinite(r[key]) for r in stopped for key in DIAGNOSTICS)


def test_profile_and_video_every_write_their_files_and_leave_training_unchanged(ppo, tmp_path, tiny_run):
    out = tmp_path / "run"
    ppo.main([*TINY, "--profile", "--video-every", "4", "--out", str(out)])
    assert updates(out) == updates(tiny_run[0])   # the same seed trains the same without them
    profile = json.load(open(out / "profile.json"))
    assert profile["iterations"] == 8 and profile["torch_threads"] == 1
    parts = profile["fraction_of_iteration"]
    assert set(parts) == {"env", "policy", "update"}
    assert all(0 <= f <= 1 for f in parts.values())   # each part is within its iteration
    assert len(profile["video"]["clip_s"]) == 2 and profile["video"]["every"] == 4
    assert sorted(os.listdir(out / "videos")) == ["iter00004.mp4", "iter00008.mp4"]
    for name in ("iter00004.mp4", "iter00008.mp4"):
        assert mp4_is_complete(str(out / "videos" / name))


@pytest.fixture(scope="module")
def reach_demos(tmp_path_factory):
    """4 scripted Reach-v1 demos (robosim demos generate)."""
    from robosim.cli import main
    path = tmp_path_factory.mktemp("demos") / "reach4.h5"
    assert main(["demos", "generate", "Reach-v1", "-n", "4", "--num-envs", "2", "--out", str(path)]) == 0
    return path


def test_demos_add_a_decaying_term_and_anneal_lr_reaches_zero(ppo, tmp_path, reach_demos):
    out = tmp_path / "run"
    ppo.main([*TINY, "--demos", str(reach_demos), "--demo-steps", "128", "--anneal-lr", "--out", str(out)])
    rows = updates(out)
    # weight 1 - env_steps / 128 at the start of each update (env_steps 0, 32, 64, ...), then 0
    assert [r["demo_weight"] for r in rows] == [max(0.0, 1 - 32 * i / 128) for i in range(8)]
    assert all(math.isfinite(r["demo_loss"]) and r["demo_loss"] > 0 for r in rows[:4])
    assert [r["lr"] for r in rows] == [3e-4 * (1 - 32 * i / 256) for i in range(8)]   # --anneal-lr


def test_demos_of_another_task_are_refused(ppo, tmp_path, reach_demos):
    with pytest.raises(SystemExit, match=r"--demos must hold episodes of \(task, robot, control mode\) "
                                         r"\('PushCubeTask'"):
        ppo.main([*TINY, "--task", "PushCube-v1", "--demos", str(reach_demos), "--out", str(tmp_path / "run")])

