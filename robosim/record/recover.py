"""Recover recordings left behind by a killed run (SIGKILL, power loss, OOM killer).

A run that dies without closing its writers leaves, next to the final paths:
  .NAME.<random>.parts/         a trajectory's finished episodes, one complete file each
                                (robosim.record.trajectory), plus owner.json
  .STEM.pid<PID>-<random>.partial.mp4   a fragmented mp4 (robosim.record.video), playable up to
                                its last fragment
  .STEM.pid<PID>-<random>.partial.h5    an HDF5 file being written (`robosim demos render`)
  .NAME.<random>.partial/       a dataset directory being written (`robosim demos export`)
`recover(directory)` merges each parts directory into NAME (or NAME-recovered-K.h5 when
NAME exists or a running writer claims it) and renames each playable partial mp4 the
same way. A partial HDF5 file or dataset directory is renamed the same way when it is
complete (killed between finishing and renaming: every episode readable with its obs
group; meta/info.json, written last, readable); otherwise it is removed and reported by
name: it holds nothing its writer's input does not (render or export again).
Leftovers whose owner process is still alive, or whose final name a live writer claims
(robosim.record.files.OutputLock), are skipped (it may still be recording) unless
`force`. Each episode file carries the trajectory's header, so a
parts directory whose owner.json is lost or damaged is still recovered (named after
the directory); a damaged episode file is reported and kept, the others recovered.
`robosim recover DIR` runs it; RecordEpisode prints a pointer to it when it finds
leftovers in the directory it writes to.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from robosim.record.files import LOCK_SUFFIX, OutputLock, remove_stale_lock
from robosim.record.trajectory import (
    OWNER_FILE,
    PARTS_SUFFIX,
    TRAJECTORY_SUFFIXES,
    TrajectoryFile,
    merge_parts,
    read_parts,
)


@dataclass
class RecoverReport:
    """What recover() did. recovered: (leftover, written file, episodes or frames);
    skipped: (leftover, why), left on disk unless `why` says removed; notes: (leftover,
    problem) for damage worked around (a lost or malformed owner.json); errors: (leftover,
    error) where writing the recovered file failed (the leftover is kept)."""

    recovered: list[tuple[str, str, int]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"recovered {len(self.recovered)} file(s), skipped {len(self.skipped)}"
                 + (f", failed {len(self.errors)}" if self.errors else "")]
        lines += [f"  {_short(src)} -> {dst} ({n} {'frames' if dst.endswith('.mp4') else 'episodes'})"
                  for src, dst, n in self.recovered]
        lines += [f"  note {_short(src)}: {why}" for src, why in self.notes]
        lines += [f"  skipped {_short(src)}: {why}" for src, why in self.skipped]
        lines += [f"  failed {_short(src)}: {why}" for src, why in self.errors]
        return "\n".join(lines)


def _short(path: str) -> str:
    """A leftover's name, with its parts directory for a file inside one."""
    parent = os.path.basename(os.path.dirname(path))
    return f"{parent}/{os.path.basename(path)}" if _is_parts_dir(parent) else os.path.basename(path)


_PARTIAL_VIDEO = re.compile(r"^\.(.+)\.pid(\d+)-[^.]*\.partial\.mp4$")
_PARTIAL_H5 = re.compile(r"^\.(.+)\.pid(\d+)-[^.]*\.partial(\.h5|\.hdf5)$")
_PARTIAL_DIR = re.compile(r"^\.(.+)\.[^.]+\.partial$")
_PARTS_DIR = re.compile(r"^\.(.+)\.[^.]*" + re.escape(PARTS_SUFFIX) + "$")


def _is_parts_dir(name: str) -> bool:
    return name.startswith(".") and name.endswith(PARTS_SUFFIX)


def _is_partial_video(name: str) -> bool:
    return name.startswith(".") and name.endswith(".partial.mp4")


def _kind(directory: str, name: str) -> str | None:
    """'parts', 'video', 'h5' or 'dataset' for a leftover's name, None for other files."""
    if _is_parts_dir(name):
        return "parts"
    if _is_partial_video(name):
        return "video"
    if _PARTIAL_H5.match(name):
        return "h5"
    if _PARTIAL_DIR.match(name) and os.path.isdir(os.path.join(directory, name)):
        return "dataset"
    return None


def find_leftovers(directory: str) -> list[str]:
    """Paths of the leftovers in `directory`: parts directories, partial mp4s, partial
    HDF5 files and partial dataset directories."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if _kind(directory, n)]


def point_to_leftovers(directory: str) -> None:
    """Print one line to stderr when `directory` holds leftovers of an interrupted run."""
    found = find_leftovers(directory)
    if found:
        print(f"robosim: {directory} holds {len(found)} unfinished recording(s) from an interrupted or running "
              f"process ({', '.join(os.path.basename(p) for p in found[:3])}{', ...' if len(found) > 3 else ''}); "
              f"`robosim recover {directory}` saves what they hold", file=sys.stderr)


def _claim_free_name(directory: str, stem: str, ext: str) -> tuple[str, OutputLock]:
    """The first of NAME, NAME-recovered-1, ... that does not exist and no live writer is
    recording to, claimed (its lock is held) so no writer starting now can replace it."""
    k = 0
    while True:
        path = os.path.join(directory, f"{stem}-recovered-{k}{ext}" if k else stem + ext)
        k += 1
        if os.path.exists(path):
            continue
        try:
            lock = OutputLock(path, arg="recovered file")
        except ValueError:
            continue        # a running writer will finish this name
        if not os.path.exists(path):
            return path, lock
        lock.release()


def _owner_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _count_frames(path: str) -> int:
    import imageio

    try:
        with imageio.get_reader(path, format="FFMPEG") as reader:
            return sum(1 for _ in reader)
    except Exception:   # imageio raises several types for an unreadable file
        return 0


def read_owner(parts_dir: str) -> tuple[int | None, str | None, list[str]]:
    """(pid, output file name, problems) from `parts_dir`'s owner.json. Never raises for a
    damaged file: a missing, truncated or malformed owner.json (or field) gives None
    there and one line in problems; the name then comes from the directory's own name
    (.NAME.<random>.parts), and the episodes' headers come from their own files."""
    problems: list[str] = []
    from_dir = _PARTS_DIR.match(os.path.basename(parts_dir))
    fallback = from_dir.group(1) if from_dir else "recovered.h5"
    if not fallback.lower().endswith(TRAJECTORY_SUFFIXES):
        fallback += ".h5"
    named = f"output named {fallback!r} after the directory"
    try:
        with open(os.path.join(parts_dir, OWNER_FILE), "rb") as f:
            owner = json.loads(f.read().decode())
    except FileNotFoundError:
        return None, fallback, [f"{OWNER_FILE} is missing; {named}, headers from the episode files"]
    except (OSError, ValueError) as err:   # ValueError: JSONDecodeError, UnicodeDecodeError
        return None, fallback, [f"{OWNER_FILE} is unreadable (truncated or damaged: {err}); {named}, "
                                f"headers from the episode files"]
    if not isinstance(owner, dict):
        return None, fallback, [f"{OWNER_FILE} must hold a JSON object, got {type(owner).__name__}; {named}, "
                                f"headers from the episode files"]
    pid = owner.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        problems.append(f"{OWNER_FILE} pid must be a positive int, got {pid!r}; its writer counts as ended")
        pid = None
    final_path = owner.get("final_path")
    name = os.path.basename(final_path) if isinstance(final_path, str) else ""
    if not name.lower().endswith(TRAJECTORY_SUFFIXES) or name.startswith("."):
        problems.append(f"{OWNER_FILE} final_path must be a .h5/.hdf5 path, got {final_path!r}; {named}")
        name = fallback
    if not isinstance(owner.get("header"), dict):
        problems.append(f"{OWNER_FILE} header must be a JSON object, got {owner.get('header')!r:.60}; "
                        f"headers from the episode files")
    return pid, name, problems


def _recover_parts(path: str, directory: str, force: bool, report: RecoverReport) -> None:
    if not os.path.isdir(path):
        report.skipped.append((path, "not a directory (left in place)"))
        return
    pid, name, problems = read_owner(path)
    if pid is not None and not force and _owner_alive(pid):
        report.skipped.append((path, f"process {pid} is still running (use force)"))
        return
    report.notes += [(path, p) for p in problems]
    names, bad, _ = read_parts(path)
    report.skipped += [(os.path.join(path, n), f"unreadable, kept in place ({why})") for n, why in bad]
    if not names:
        if not bad:     # killed before its first episode ended: nothing to keep
            shutil.rmtree(path)
            report.skipped.append((path, "no finished episode (removed)"))
        return
    stem, ext = os.path.splitext(name)
    _move_into_place(path, directory, stem, ext, lambda target: merge_parts(path, target)[0],
                     "cannot write {target!r}: {err}; the episodes stay in place", report)


def _recover_video(path: str, directory: str, force: bool, report: RecoverReport) -> None:
    name = os.path.basename(path)
    match = _PARTIAL_VIDEO.match(name)
    if not force and match and _owner_alive(int(match.group(2))):
        report.skipped.append((path, f"process {match.group(2)} is still running (use force)"))
        return
    frames = _count_frames(path)
    if frames == 0:
        report.skipped.append((path, "no playable frame (left in place)"))
        return
    stem = match.group(1) if match else name[1:].split(".")[0]
    _move_into_place(path, directory, stem, ".mp4", lambda target: (os.replace(path, target), frames)[1],
                     "cannot rename it to {target!r}: {err}", report)


def _recover_partial(path: str, directory: str, force: bool, report: RecoverReport) -> None:
    """A partial HDF5 file (render) or dataset directory (export): renamed into place when
    complete, else removed; both reported by name."""
    name = os.path.basename(path)
    h5 = _PARTIAL_H5.match(name)
    if h5:
        stem, ext, pid, writer = h5.group(1), h5.group(3), int(h5.group(2)), "render"
    else:
        found = _PARTIAL_DIR.match(name)
        stem, ext, pid, writer = found.group(1) if found else name, "", None, "export"
    if not force and ((pid is not None and _owner_alive(pid)) or _claimed(os.path.join(directory, stem + ext))):
        report.skipped.append((path, f"a running process is still writing {stem + ext} (use force)"))
        return
    count, why = _complete_render(path) if h5 else _complete_dataset(path)
    if count:
        def move(target: str) -> int:
            os.rename(path, target)
            return count

        _move_into_place(path, directory, stem, ext, move, "cannot rename it to {target!r}: {err}", report)
        return
    what = f"incomplete output of a killed `robosim demos {writer}` ({why})"
    try:
        if h5:
            os.unlink(path)
        else:
            shutil.rmtree(path)
    except OSError as err:
        report.errors.append((path, f"{what}; cannot remove it: {err}"))
        return
    report.skipped.append((path, f"{what}; removed: it held nothing its input does not, {writer} again"))


def _claimed(final_path: str) -> bool:
    """True when a live writer holds the OutputLock of `final_path`."""
    try:
        OutputLock(final_path, arg="final path").release()
    except ValueError:
        return True
    return False


def _complete_render(path: str) -> tuple[int, str]:
    """(episodes, "") when the HDF5 file at `path` is a readable trajectory whose every
    episode has an obs group of T+1 rows per dataset, else (0, what is missing)."""
    import h5py

    try:
        traj = TrajectoryFile(path, arg="partial file")
        with h5py.File(path, "r") as f:
            for k, name in enumerate(traj.episode_names):
                rows = traj.episode(k).length + 1
                found: list = []
                if "obs" in f[name]:
                    f[name]["obs"].visititems(lambda _, item, found=found: found.append(item)
                                              if hasattr(item, "shape") else None)
                if not found or any(d[()].shape[:1] != (rows,) for d in found):
                    return 0, f"{name} has no complete obs group"
        return len(traj), "" if len(traj) else "no episode"
    except Exception as err:   # h5py raises several types for a file its writer never closed
        return 0, f"unreadable: {' '.join(str(err).split())}"


def _complete_dataset(path: str) -> tuple[int, str]:
    """(episodes, "") when the dataset directory at `path` has its meta/info.json (the
    last file export writes), else (0, what is missing)."""
    try:
        with open(os.path.join(path, "meta", "info.json"), "rb") as f:
            info = json.loads(f.read().decode())
    except FileNotFoundError:
        return 0, "no meta/info.json, the last file it writes"
    except (OSError, ValueError) as err:
        return 0, f"meta/info.json is unreadable: {err}"
    episodes = info.get("total_episodes") if isinstance(info, dict) else None
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        return 0, f"meta/info.json total_episodes must be a positive int, got {episodes!r}"
    return episodes, ""


def _move_into_place(path: str, directory: str, stem: str, ext: str, move: Callable[[str], int],
                     failure: str, report: RecoverReport) -> None:
    """Claim a free final name STEM[-k]EXT in `directory`, run move(target) -> count,
    and report the recovery, or the OSError (`failure` formatted with target and err)."""
    target, lock = _claim_free_name(directory, stem, ext)
    try:
        count = move(target)
    except OSError as err:
        report.errors.append((path, failure.format(target=target, err=err)))
        return
    finally:
        lock.release()
    report.recovered.append((path, target, count))


def recover(directory: str, force: bool = False) -> RecoverReport:
    """Turn every leftover recording in `directory` into a normal file (see module doc).

    Never deletes a readable episode or a playable video: a damaged episode file is
    reported and left in its parts directory while the others are recovered; a lost or
    malformed owner.json is reported and worked around. Also removes lock files of
    writers that are gone."""
    if not isinstance(directory, (str, os.PathLike)) or not os.path.isdir(directory):
        raise ValueError(f"directory must be an existing directory, got {directory!r}")
    directory = os.path.abspath(os.fspath(directory))
    report = RecoverReport()
    recoverers = {"parts": _recover_parts, "video": _recover_video, "h5": _recover_partial,
                  "dataset": _recover_partial}
    for path in find_leftovers(directory):
        kind = _kind(directory, os.path.basename(path))
        if kind is not None:   # None: it changed since it was listed
            recoverers[kind](path, directory, force, report)
    for name in sorted(os.listdir(directory)):
        if name.startswith(".") and name.endswith(LOCK_SUFFIX) and os.path.isfile(os.path.join(directory, name)):
            remove_stale_lock(os.path.join(directory, name))
    return report
