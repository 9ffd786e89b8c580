"""LeRobot import of datasets robosim did not write (issue 32): the whole input is checked
before anything is written, every error names the file, the episode and the field, and
nothing (no traceback, no file, no hidden leftover) is left for a bad dataset. Each bad
dataset is robosim's own --no-video export of the session's 3 PickCube demos, stripped
of its robosim entries and then damaged in one way."""
from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from robosim.cli import main as robosim_main
from robosim.demos.lerobot import export_lerobot, import_lerobot
from robosim.envs import get_task, list_tasks
from robosim.record.replay import replay
from robosim.record.trajectory import TrajectoryFile

DATA = "data/chunk-000/file-000.parquet"
EPISODES = "meta/episodes/chunk-000/file-000.parquet"
INFO = "meta/info.json"


@pytest.fixture(scope="module")
def plain(demos, tmp_path_factory):
    """(demos path, dataset dir): the demos exported without video."""
    out = str(tmp_path_factory.mktemp("lerobot_import") / "plain")
    export_lerobot(demos[0], out, video=False, progress=False)
    return demos[0], out


def _foreign(src: str, dest: str, strip: bool = True) -> str:
    """A copy of dataset `src` at `dest`, without robosim's entries when `strip`."""
    shutil.copytree(src, dest)
    if strip:
        _edit_info(dest, lambda info: info.pop("robosim"))
        _edit_table(dest, EPISODES, lambda t: t.drop([c for c in t.column_names if c.startswith("robosim/")]))
    return dest


def _edit_info(root: str, change) -> None:
    info = json.load(open(os.path.join(root, INFO)))
    change(info)
    json.dump(info, open(os.path.join(root, INFO), "w"))


def _edit_table(root: str, rel: str, change) -> None:
    table = pq.read_table(os.path.join(root, rel))
    pq.write_table(change(table), os.path.join(root, rel))


def _set_column(table: pa.Table, name: str, values: np.ndarray) -> pa.Table:
    """`table` with column `name` replaced by float32 `values` (F,) or (F, n)."""
    flat = pa.array(values.reshape(-1).astype(np.float32))
    column = flat if values.ndim == 1 else pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
    return table.set_column(table.column_names.index(name), name, column)


def _column(root: str, name: str) -> np.ndarray:
    return np.stack(pq.read_table(os.path.join(root, DATA)).column(name).to_pylist())


def _refused(dataset: str, tmp_path, match: str, capsys, task: str | None = "PickCube-v1") -> None:
    """import_lerobot raises ValueError matching `match`; the CLI prints it as its
    `error:` line with exit status 2, no traceback; neither leaves a file or a hidden directory behind."""
    out = tmp_path / "out.h5"
    with pytest.raises(ValueError, match=match):
        import_lerobot(dataset, str(out), task=task, progress=False)
    capsys.readouterr()
    argv = ["demos", "import", dataset, "--out", str(out)] + (["--task", task] if task else [])
    assert robosim_main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error: " in err.strip().splitlines()[-1]   # after the progress bar
    assert not out.exists() and [n for n in os.listdir(tmp_path) if n.startswith(".")] == []


def test_every_built_in_task_has_an_instruction():
    for task_id in list_tasks():
        instruction = get_task(task_id).instruction
        assert instruction[:1].isupper() and instruction.endswith(".") and len(instruction.split()) >= 4, task_id


def test_foreign_import_without_next_columns_takes_them_from_the_resimulation(plain, tmp_path):
    """No next.* columns: rewards, success and flags come from the re-simulation, so
    successful demos stay successful; the file replays exactly."""
    path, out = plain
    dataset = _foreign(out, str(tmp_path / "bare"))
    _edit_table(dataset, DATA, lambda t: t.drop([c for c in t.column_names if c.startswith("next.")]))
    _edit_info(dataset, lambda info: [info["features"].pop(k) for k in list(info["features"]) if k.startswith("next.")])
    back = str(tmp_path / "bare.h5")
    import_lerobot(dataset, back, task="PickCube-v1", progress=False)
    source, result = TrajectoryFile(path), TrajectoryFile(back)
    for k in range(len(source)):
        a, b = source.episode(k), result.episode(k)
        for field in ("states", "rewards", "success", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert b.success[-1]
    assert replay(back, mode="actions").exact


def test_diverging_episode_is_refused_naming_episode_and_step(plain, tmp_path, capsys):
    """Episode 1's recorded state at step 4 moved by 1 cm: its re-simulation cannot follow."""
    _, out = plain
    dataset = _foreign(out, str(tmp_path / "moved"))
    states = _column(dataset, "observation.environment_state")
    first = pq.read_table(os.path.join(out, EPISODES)).column("dataset_from_index").to_pylist()[1]
    states[first + 4, 0] += 0.01
    _edit_table(dataset, DATA, lambda t: _set_column(t, "observation.environment_state", states))
    _refused(dataset, tmp_path, r"data/chunk-000/file-000.parquet episode 1 field 'observation.environment_state' "
                                r"must match its re-simulation .* first differs at step 4, state index 0", capsys)
    back = str(tmp_path / "loose.h5")   # a tolerance above the change lets it through
    summary = import_lerobot(dataset, back, task="PickCube-v1", tolerance=0.05, progress=False)
    assert summary["max_deviation"] == pytest.approx(0.01, abs=1e-6) and replay(back, mode="actions").exact


def test_action_column_narrower_than_info(plain, tmp_path, capsys):
    """info.json says [7], the parquet holds 5 values per frame (issue 32 item 4)."""
    _, out = plain
    for strip in (True, False):
        dataset = _foreign(out, str(tmp_path / f"narrow{strip}"), strip=strip)
        actions = _column(dataset, "action")[:, :5]
        _edit_table(dataset, DATA, lambda t, actions=actions: _set_column(t, "action", actions))
        _refused(dataset, tmp_path, r"file-000.parquet episode 0 frame 0 field 'action' must have 7 values per frame"
                                    r".* got 5", capsys, task="PickCube-v1" if strip else None)


@pytest.mark.parametrize("name", ["action", "observation.environment_state", "next.reward"])
def test_nan_values_are_refused(plain, tmp_path, capsys, name):
    _, out = plain
    dataset = _foreign(out, str(tmp_path / "nan"))
    values = _column(dataset, name).astype(np.float32)
    lengths = pq.read_table(os.path.join(out, EPISODES)).column("length").to_pylist()
    values[lengths[0] + 3] = np.nan   # episode 1, its frame 3
    _edit_table(dataset, DATA, lambda t: _set_column(t, name, values))
    _refused(dataset, tmp_path, f"file-000.parquet episode 1 frame {lengths[0] + 3} field '{name}' must be finite",
             capsys)


def test_episode_rows_that_do_not_fit_the_data(plain, tmp_path, capsys):
    _, out = plain
    frames = pq.read_table(os.path.join(out, DATA)).num_rows
    past = _foreign(out, str(tmp_path / "past"))   # episode 0 claims every frame and more
    _edit_table(past, EPISODES, lambda t: t.set_column(t.column_names.index("dataset_to_index"), "dataset_to_index",
                                                       pa.array([frames + 5] + t["dataset_to_index"].to_pylist()[1:])))
    _refused(past, tmp_path, rf"{EPISODES} episode 0 field 'dataset_to_index' must be at most {frames} .*got "
                             rf"{frames + 5}", capsys)
    shutil.rmtree(past)
    overlap = _foreign(out, str(tmp_path / "past"))   # episode 0 swallows episode 1's frames
    lengths = pq.read_table(os.path.join(out, EPISODES)).column("length").to_pylist()

    def swallow(t: pa.Table) -> pa.Table:
        for name, first in (("dataset_to_index", lengths[0] + lengths[1]), ("length", lengths[0] + lengths[1])):
            t = t.set_column(t.column_names.index(name), name, pa.array([first] + t[name].to_pylist()[1:]))
        return t

    _edit_table(overlap, EPISODES, swallow)
    _refused(overlap, tmp_path, rf"{EPISODES} episode 0 frames \[0, {lengths[0] + lengths[1]}\) must have "
                                rf"episode_index 0, got 1 at frame {lengths[0]}", capsys)


def test_bad_info_json(plain, tmp_path, capsys):
    _, out = plain
    unknown = _foreign(out, str(tmp_path / "unknown"), strip=False)
    _edit_info(unknown, lambda info: info["robosim"].update(task_id="FlyToMoon-v1"))
    _refused(unknown, tmp_path, r"meta/info.json field 'robosim' 'task_id' must be one of .*got 'FlyToMoon-v1'",
             capsys, task=None)
    listed = _foreign(out, str(tmp_path / "listed"))
    _edit_info(listed, lambda info: info.update(features=list(info["features"])))
    _refused(listed, tmp_path, r"meta/info.json field 'features' must be a dict .* got list", capsys)
    rows = _foreign(out, str(tmp_path / "rows"), strip=False)   # robosim entry, but a row lost its final state
    _edit_table(rows, EPISODES, lambda t: t.drop(["robosim/final_state"]))
    _refused(rows, tmp_path, rf"{EPISODES} episode 0 must have the fields .* missing \['robosim/final_state'\]",
             capsys, task=None)


def test_diverging_episode_is_skipped_and_named_on_request(plain, tmp_path, capsys):
    """diverging="skip" (CLI --skip-diverging): episode 1, moved as above, is left out and
    named; episodes 0 and 2 come in exactly; a dataset whose every episode diverges is
    still refused."""
    path, out = plain
    dataset = _foreign(out, str(tmp_path / "moved"))
    states = _column(dataset, "observation.environment_state")
    starts = pq.read_table(os.path.join(out, EPISODES)).column("dataset_from_index").to_pylist()
    states[starts[1] + 4, 0] += 0.01
    _edit_table(dataset, DATA, lambda t: _set_column(t, "observation.environment_state", states))
    back = str(tmp_path / "kept.h5")
    summary = import_lerobot(dataset, back, task="PickCube-v1", diverging="skip", progress=False)
    assert summary["episodes"] == 2 and len(summary["skipped"]) == 1
    assert re.search(r"file-000.parquet episode 1 field 'observation.environment_state' .* first differs at step 4",
                     summary["skipped"][0])
    source, result = TrajectoryFile(path), TrajectoryFile(back)
    for k_src, k_out in ((0, 0), (2, 1)):
        np.testing.assert_array_equal(source.episode(k_src).states, result.episode(k_out).states)
        np.testing.assert_array_equal(source.episode(k_src).actions, result.episode(k_out).actions)
    assert replay(back, mode="actions").exact

    cli_out = tmp_path / "cli.h5"
    assert robosim_main(["demos", "import", dataset, "--out", str(cli_out), "--task", "PickCube-v1",
                         "--skip-diverging"]) == 0
    err = capsys.readouterr().err
    assert "skipped: " in err and "episode 1 field 'observation.environment_state'" in err
    assert len(TrajectoryFile(str(cli_out))) == 2

    for k in (0, 2):
        states[starts[k] + 2, 1] += 0.01
    _edit_table(dataset, DATA, lambda t: _set_column(t, "observation.environment_state", states))
    with pytest.raises(ValueError, match=r"every episode diverges from its re-simulation.*episode 0 field"):
        import_lerobot(dataset, str(tmp_path / "none.h5"), task="PickCube-v1", diverging="skip", progress=False)
    assert not (tmp_path / "none.h5").exists()
    with pytest.raises(ValueError, match=r"diverging must be one of \['refuse', 'skip'\], got 'mark'"):
        import_lerobot(dataset, str(tmp_path / "none.h5"), task="PickCube-v1", diverging="mark", progress=False)
