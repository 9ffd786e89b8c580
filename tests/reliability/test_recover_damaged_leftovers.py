"""`robosim recover` on leftovers whose bookkeeping is damaged: it never deletes a
readable episode, recovers from the episode files' own headers when owner.json is lost
or malformed, keeps (and reports) a damaged episode file while recovering the others,
and says what it worked around in one line, never with a traceback.

The leftover is real: a child process records 5 episodes of Reach-v1 through
RecordEpisode and SIGKILLs itself, so its parts directory is exactly what a killed run
leaves. Each test damages a copy of it."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from robosim.record import recover
from robosim.record.trajectory import OWNER_FILE, TrajectoryFile

EPISODES = 5
KILLED_RUN = textwrap.dedent(f"""
    import os, signal, torch, robosim
    from robosim.record import RecordEpisode
    env = robosim.make("Reach-v1", num_envs=1, max_episode_steps=3)
    rec = RecordEpisode(env, trajectory="run.h5")
    gen = torch.Generator().manual_seed(0)
    for k in range({EPISODES} + 1):          # the 6th reset ends the 5th episode
        rec.reset(seed=k)
        if k < {EPISODES}:
            for t in range(3):
                rec.step(torch.rand((1, env.single_action_space.shape[0]), generator=gen) * 2 - 1)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    """A directory holding only the parts directory of a SIGKILLed 5-episode recording."""
    out = tmp_path_factory.mktemp("killed")
    child = subprocess.run([sys.executable, "-c", KILLED_RUN], cwd=out, capture_output=True, text=True,
                           timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    for name in os.listdir(out):
        if name.endswith(".lock"):
            os.unlink(out / name)
    (parts,) = [n for n in os.listdir(out) if n.endswith(".parts")]
    assert len([n for n in os.listdir(out / parts) if n.startswith("episode_")]) == EPISODES
    return out / parts


@pytest.fixture
def leftover(tmp_path, killed_run):
    """A fresh copy of the killed run's parts directory in tmp_path/out."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copytree(killed_run, out / killed_run.name)
    return out / killed_run.name


def _episodes(path) -> list[int]:
    """Seeds of every episode of the trajectory at `path`, each read and validated."""
    traj = TrajectoryFile(str(path))
    return [traj.episode(k).seed for k in range(len(traj))]


def _recover_cli(directory) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "robosim.cli", "recover", str(directory)], capture_output=True,
                            text=True, timeout=600)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.mark.slow   # recording subprocesses: ~85 s
def test_truncated_owner_json_is_recovered_from_the_episodes_not_deleted(leftover):
    owner = leftover / OWNER_FILE
    owner.write_bytes(owner.read_bytes()[:20])              # a torn write of owner.json
    result = _recover_cli(leftover.parent)
    assert result.returncode == 0, result.stderr
    assert "owner.json is unreadable" in result.stdout and "removed" not in result.stdout, result.stdout
    assert _episodes(leftover.parent / "run.h5") == list(range(EPISODES))   # named after the directory
    assert sorted(os.listdir(leftover.parent)) == ["run.h5"]


MALFORMED = {
    "missing": None,
    "empty": b"",
    "not JSON": b"\x00\xff garbage",
    "a list": json.dumps([1, 2]).encode(),
    "no final_path": json.dumps({"pid": 2 ** 22 + 1, "header": {}}).encode(),
    "final_path not a str": json.dumps({"pid": 2 ** 22 + 1, "final_path": 7, "header": {}}).encode(),
    "header not a dict": "HEADER",
    "pid not an int": json.dumps({"pid": "x", "final_path": "/elsewhere/run.h5", "header": []}).encode(),
}


@pytest.mark.parametrize("damage", list(MALFORMED))
def test_every_malformed_owner_json_gives_a_report_line_and_all_episodes(leftover, damage):
    owner = leftover / OWNER_FILE
    if MALFORMED[damage] is None:
        owner.unlink()
    elif MALFORMED[damage] == "HEADER":
        data = json.loads(owner.read_text())
        owner.write_text(json.dumps(dict(data, pid=2 ** 22 + 1, header="not a dict")))
    else:
        owner.write_bytes(MALFORMED[damage])
    report = recover(str(leftover.parent))
    assert [dst for _, dst, _ in report.recovered] == [str(leftover.parent / "run.h5")], report.summary()
    assert report.notes and all(OWNER_FILE in why for _, why in report.notes), report.summary()
    assert _episodes(leftover.parent / "run.h5") == list(range(EPISODES))
    assert not leftover.exists()


def test_a_damaged_episode_file_is_kept_and_reported_while_the_others_are_recovered(leftover):
    bad = leftover / "episode_00002.h5"
    bad.write_bytes(bad.read_bytes()[:1000])                # truncated mid-file
    (leftover / "episode_00003.h5").write_bytes(b"random bytes, not HDF5")
    report = recover(str(leftover.parent))
    assert _episodes(leftover.parent / "run.h5") == [0, 1, 4], report.summary()
    skipped = dict(report.skipped)
    assert "unreadable, kept in place" in skipped[str(bad)], report.summary()
    assert "episode_00003.h5: unreadable" in report.summary()
    assert sorted(os.listdir(leftover)) == ["episode_00002.h5", "episode_00003.h5", OWNER_FILE]
    again = recover(str(leftover.parent))                   # reported again, nothing written or deleted
    assert again.recovered == [] and len(again.skipped) == 2
    assert sorted(os.listdir(leftover)) == ["episode_00002.h5", "episode_00003.h5", OWNER_FILE]
    assert sorted(os.listdir(leftover.parent)) == [leftover.name, "run.h5"]


def test_only_a_directory_without_any_episode_file_is_removed(tmp_path):
    empty = tmp_path / ".run.h5.abc123.parts"              # killed between mkdtemp and owner.json
    empty.mkdir()
    only_owner = tmp_path / ".other.h5.xyz.parts"          # killed before its first episode ended
    only_owner.mkdir()
    (only_owner / OWNER_FILE).write_text(json.dumps({"pid": 2 ** 22 + 1, "final_path": "other.h5", "header": {}}))
    damaged_only = tmp_path / ".third.h5.q.parts"          # nothing readable, but not nothing: kept
    damaged_only.mkdir()
    (damaged_only / "episode_00000.h5").write_bytes(b"\x89HDF\r\n")
    report = recover(str(tmp_path))
    assert report.recovered == [], report.summary()
    assert sorted(os.listdir(tmp_path)) == [damaged_only.name]
    assert os.listdir(damaged_only) == ["episode_00000.h5"]


# -- leftovers of a killed `robosim demos render` / `export` --------------------------
KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    import robosim.demos.lerobot as lerobot, robosim.demos.render as render, robosim.record.files as files
    from robosim.demos import generate_demos
    generate_demos("PickCube-v1", 2, "demos.h5", num_envs=2, seed=5)
    command, moment = sys.argv[1:]

    def kill(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if command == "render":
        write = render._write_tree
        if moment == "midway":      # after the first episode's obs: a half-written HDF5 file
            render._write_tree = lambda *a: (write(*a), kill())
        else:                       # complete and closed, not yet renamed
            files.replace_into_place = kill
        render.render_demos("demos.h5", "demos_rgb.h5", "rgb", sensor_configs={"width": 16, "height": 16})
    else:
        add = lerobot._DatasetWriter.add
        if moment == "midway":
            lerobot._DatasetWriter.add = lambda self, *a: (add(self, *a), kill())
        else:
            lerobot.replace_dir_into_place = kill
        lerobot.export_lerobot("demos.h5", "dataset", video=False, progress=False)
""")


def _killed_writer(directory, command: str, moment: str) -> str:
    """Run `command` (render or export) in a child killed at `moment`; its leftover's name."""
    child = subprocess.run([sys.executable, "-c", KILLED_WRITER, command, moment], cwd=directory,
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    (leftover,) = [n for n in os.listdir(directory) if ".partial" in n]
    return leftover


@pytest.mark.parametrize("command", ["render", "export"])
def test_a_half_written_render_or_export_is_removed_and_named(tmp_path, command):
    if command == "export":
        pytest.importorskip("pyarrow")
    leftover = _killed_writer(tmp_path, command, "midway")
    result = _recover_cli(tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"skipped {leftover}: incomplete output of a killed `robosim demos {command}`" in result.stdout
    assert "removed" in result.stdout, result.stdout
    assert sorted(n for n in os.listdir(tmp_path) if not n.endswith(".lock")) == ["demos.h5"]


def test_a_render_killed_before_its_rename_is_recovered(tmp_path):
    import h5py

    leftover = _killed_writer(tmp_path, "render", "before rename")
    report = recover(str(tmp_path))
    assert report.recovered == [(str(tmp_path / leftover), str(tmp_path / "demos_rgb.h5"), 2)], report.summary()
    with h5py.File(tmp_path / "demos_rgb.h5", "r") as f:
        for name in ("episode_00000", "episode_00001"):
            rows = f[name]["states"].shape[0]
            assert f[name]["obs/sensor_data/base_camera/rgb"].shape == (rows, 16, 16, 3)


def test_an_export_killed_before_its_rename_is_recovered(tmp_path):
    """Recovered by `robosim recover` in a child, as a user runs it: a crash there fails
    this test instead of ending the whole run (a libhdf5 segfault that an earlier test's
    damaged HDF5 state caused once ended full runs around here)."""
    pytest.importorskip("pyarrow")
    leftover = _killed_writer(tmp_path, "export", "before rename")
    result = _recover_cli(tmp_path)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.startswith("recovered 1 file(s), skipped 0"), result.stdout
    assert f"-> {tmp_path / 'dataset'} (2 episodes)" in result.stdout, result.stdout
    assert not (tmp_path / leftover).exists()
    info = json.loads((tmp_path / "dataset" / "meta" / "info.json").read_text())
    assert info["total_episodes"] == 2 and info["robosim"]["task_id"] == "PickCube-v1"


def test_a_partial_file_a_live_writer_holds_is_left_alone(tmp_path):
    from robosim.record.files import OutputLock

    leftover = _killed_writer(tmp_path, "render", "midway")
    lock = OutputLock(str(tmp_path / "demos_rgb.h5"))   # a writer of that name is running
    try:
        report = recover(str(tmp_path))
    finally:
        lock.release()
    assert report.skipped == [(str(tmp_path / leftover), "a running process is still writing demos_rgb.h5 "
                                                         "(use force)")]
    assert (tmp_path / leftover).exists()


def test_a_recovered_demos_file_keeps_its_demos_attribute(tmp_path):
    killed = textwrap.dedent("""
        import os, signal
        import robosim.record.trajectory as trajectory
        from robosim.demos import generate_demos
        add = trajectory.TrajectoryWriter.add_episode

        def add_then_die(self, episode):   # killed right after the second kept episode is on disk
            add(self, episode)
            if self.episodes_written == 2:
                os.kill(os.getpid(), signal.SIGKILL)

        trajectory.TrajectoryWriter.add_episode = add_then_die
        generate_demos("PickCube-v1", 5, "demos.h5", num_envs=2, seed=5)
    """)
    child = subprocess.run([sys.executable, "-c", killed], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    report = recover(str(tmp_path))
    assert [dst for _, dst, _ in report.recovered] == [str(tmp_path / "demos.h5")], report.summary()
    traj = TrajectoryFile(str(tmp_path / "demos.h5"))
    demos = json.loads(traj.attrs["demos"])
    assert len(traj) == 2 and demos["kept"] == 2 and demos["requested"] == 5 and demos["task"] == "PickCube-v1"
