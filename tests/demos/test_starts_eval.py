"""Held-out evaluation of checkpoints trained on demos: they carry the demos' seeds,
`robosim eval` picks seeds past them by default and warns when --seed overlaps them;
BC learns from DART (noisy) demos by re-simulating the executed actions; the learners
take --import."""
from __future__ import annotations

import os
import sys

import pytest

from robosim.cli import main as robosim_main
from robosim.demos import generate_demos

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import bc  # noqa: E402

TINY = ["--steps", "2", "--eval-every", "2", "--eval-episodes", "2", "--eval-envs", "2", "--seed", "0"]


@pytest.fixture(scope="module")
def noisy_bc(tmp_path_factory):
    """(demos path, BC checkpoint path) of 2 DART PickCube demos from seed 0, 2 BC steps."""
    tmp = tmp_path_factory.mktemp("heldout")
    path = str(tmp / "noisy.h5")
    generate_demos("PickCube-v1", 2, path, num_envs=2, seed=0, action_noise=0.1)
    summary = bc.main(["--demos", path, "--out", str(tmp / "bc"), *TINY])
    return path, str(tmp / "bc" / "policy.pt"), summary


def test_bc_on_dart_demos_re_simulates_the_executed_actions(noisy_bc):
    _, _, summary = noisy_bc
    # the clean actions alone would lead elsewhere (tests/demos/test_dart.py); with the noise re-created
    # from each seed every re-simulated state equals the recorded one
    assert summary["demos"] == 2 and summary["demos_diverged"] == 0 and summary["demos_action_noise"] == 0.1


def _eval(monkeypatch, checkpoint: str, *extra: str) -> int:
    monkeypatch.setenv("ROBOSIM_POLICY", checkpoint)
    return robosim_main(["eval", "PickCube-v1", "--policy", "robosim.rollout.checkpoint:from_env_var",
                         "--episodes", "2", "--num-envs", "2", *extra])


def test_eval_defaults_to_seeds_the_demos_never_used(noisy_bc, monkeypatch, capsys):
    from robosim.record import TrajectoryFile

    traj = TrajectoryFile(noisy_bc[0])
    seeds = [traj.episode(k).seed for k in range(len(traj))]
    assert _eval(monkeypatch, noisy_bc[1]) == 0
    out, err = capsys.readouterr()
    assert f"(seed {max(seeds) + 1})" in out and "warning" not in err
    assert _eval(monkeypatch, noisy_bc[1], "--seed", str(min(seeds))) == 0
    out, err = capsys.readouterr()
    assert f"(seed {min(seeds)})" in out and "warning:" in err and "seeds of the checkpoint's demos" in err
    assert _eval(monkeypatch, noisy_bc[1], "--seed", "1000") == 0
    assert "warning" not in capsys.readouterr().err


def test_learners_take_import(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        bc.parse_args(["--demos", "x.h5", "--import", "no_such_module_here"])
    (tmp_path / "my_empty_plugin.py").write_text("IMPORTED = True\n")
    args = bc.parse_args(["--demos", "x.h5", "--import", "my_empty_plugin"])
    assert args.imports == ["my_empty_plugin"] and sys.modules["my_empty_plugin"].IMPORTED
