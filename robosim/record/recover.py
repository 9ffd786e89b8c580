"""Recover recordings left behind by a killed run (SIGKILL, power loss, OOM killer).

A run that dies without closing its writers leaves, next to the final paths:
  .NAME.<random>.parts/         a trajectory's finished episodes, one complete file each
                                (robosim.record.trajectory), plus owner.json
  .STEM.pid<PID>-<random>.partial.mp4   a fragmented mp4 (robosim.record.video), playable up to
                                its last fragment
`recover(directory)` merges each parts directory into NAME (or NAME-recovered-K.h5 when
NAME exists) and renames each playable partial mp4 the same way. Leftovers whose
owner process is still alive are skipped (it may still be recording) unless `force`.
`robosim recover DIR` runs it; RecordEpisode prints a pointer to it when it finds
leftovers in the directory it writes to.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field

from robosim.record.trajectory import OWNER_FILE, PARTS_SUFFIX, merge_parts


@dataclass
class RecoverReport:
    """What recover() did: (leftover, written file, episodes or frames) per recovery."""

    recovered: list[tuple[str, str, int]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)     # (leftover, why)

    def summary(self) -> str:
        lines = [f"recovered {len(self.recovered)} file(s), skipped {len(self.skipped)}"]
        lines += [f"  {os.path.basename(src)} -> {dst} ({n} {'frames' if dst.endswith('.mp4') else 'episodes'})"
                  for src, dst, n in self.recovered]
        lines += [f"  skipped {os.path.basename(src)}: {why}" for src, why in self.skipped]
        return "\n".join(lines)


_PARTIAL_VIDEO = re.compile(r"^\.(.+)\.pid(\d+)-[^.]*\.partial\.mp4$")


def _is_parts_dir(name: str) -> bool:
    return name.startswith(".") and name.endswith(PARTS_SUFFIX)


def _is_partial_video(name: str) -> bool:
    return name.startswith(".") and name.endswith(".partial.mp4")


def find_leftovers(directory: str) -> list[str]:
    """Paths of leftover parts directories and partial mp4s in `directory`."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if _is_parts_dir(n) or _is_partial_video(n)]


def point_to_leftovers(directory: str) -> None:
    """Print one line to stderr when `directory` holds leftovers of an interrupted run."""
    found = find_leftovers(directory)
    if found:
        print(f"robosim: {directory} holds {len(found)} unfinished recording(s) from an interrupted or running "
              f"process ({', '.join(os.path.basename(p) for p in found[:3])}{', ...' if len(found) > 3 else ''}); "
              f"`robosim recover {directory}` saves what they hold", file=sys.stderr)


def _free_name(directory: str, stem: str, ext: str) -> str:
    path = os.path.join(directory, stem + ext)
    k = 1
    while os.path.exists(path):
        path = os.path.join(directory, f"{stem}-recovered-{k}{ext}")
        k += 1
    return path


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


def recover(directory: str, force: bool = False) -> RecoverReport:
    """Turn every leftover recording in `directory` into a normal file (see module doc)."""
    if not isinstance(directory, (str, os.PathLike)) or not os.path.isdir(directory):
        raise ValueError(f"directory must be an existing directory, got {directory!r}")
    directory = os.path.abspath(os.fspath(directory))
    report = RecoverReport()
    for path in find_leftovers(directory):
        name = os.path.basename(path)
        if _is_parts_dir(name):
            owner_path = os.path.join(path, OWNER_FILE)
            try:
                with open(owner_path) as f:
                    owner = json.load(f)
            except (OSError, ValueError):
                shutil.rmtree(path)      # killed before its first write: nothing to keep
                report.skipped.append((path, "empty (removed)"))
                continue
            if not force and _owner_alive(int(owner.get("pid", -1))):
                report.skipped.append((path, f"process {owner.get('pid')} is still running (use force)"))
                continue
            stem, ext = os.path.splitext(os.path.basename(owner["final_path"]))
            target = _free_name(directory, stem, ext)
            report.recovered.append((path, target, merge_parts(path, target)))
        else:
            match = _PARTIAL_VIDEO.match(name)
            if not force and match and _owner_alive(int(match.group(2))):
                report.skipped.append((path, f"process {match.group(2)} is still running (use force)"))
                continue
            frames = _count_frames(path)
            if frames == 0:
                report.skipped.append((path, "no playable frame (left in place)"))
                continue
            stem = match.group(1) if match else name[1:].split(".")[0]
            target = _free_name(directory, stem, ".mp4")
            os.replace(path, target)
            report.recovered.append((path, target, frames))
    return report
