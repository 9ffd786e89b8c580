"""`robosim eval --workers K`: the same trajectory file as a one-process run (episodes
in the same order, same seeds and env indices, bit-identical with isolated physics),
and bad worker arguments as one clear error line."""
from __future__ import annotations

import pytest

from robosim.cli import main
from robosim.record.trajectory import TrajectoryFile

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers

EVAL = ["eval", "PickCube-v1", "--episodes", "3", "--num-envs", "3", "--seed", "2", "--physics-isolation",
        "separate"]


def test_eval_on_workers_writes_the_one_process_trajectory(local_ray, tmp_path, capsys):
    assert main([*EVAL, "--trajectory", str(tmp_path / "one.h5")]) == 0
    one_out = capsys.readouterr().out
    assert main([*EVAL, "--workers", "2", "--trajectory", str(tmp_path / "ray.h5")]) == 0
    ray_out = capsys.readouterr().out
    assert "3 episodes on 3 envs over 2 Ray workers (seed 2)" in ray_out
    # the summary lines (success rate, return, length) are the same
    assert ray_out.splitlines()[1:4] == one_out.splitlines()[1:4]
    one, ray = TrajectoryFile(str(tmp_path / "one.h5")), TrajectoryFile(str(tmp_path / "ray.h5"))
    assert one.attrs == ray.attrs and len(one) == len(ray) == 3
    for k in range(3):
        a, b = one.episode(k), ray.episode(k)
        assert (a.env_index, a.seed, a.complete) == (b.env_index, b.seed, b.complete)
        assert (a.states == b.states).all() and (a.actions == b.actions).all()


@pytest.mark.parametrize("extra, message", [
    (["--workers", "0"], "workers must be an int >= 1, got 0"),
    (["--workers", "4"], r"workers must be <= num_envs (3): every worker needs an env, got workers=4"),
    (["--workers", "2", "--address", "127.0.0.1:1"], "ray_address '127.0.0.1:1' is unreachable"),
])
def test_bad_worker_arguments_are_one_error_line(local_ray, tmp_path, capsys, extra, message):
    assert main([*EVAL, *extra, "--trajectory", str(tmp_path / "x.h5")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("robosim eval: error: ") and message in err
    assert not (tmp_path / "x.h5").exists()
