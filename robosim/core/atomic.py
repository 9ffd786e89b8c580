"""Atomic file writes: the one place robosim renames a finished file into place.

A file is written under a temporary name in the target's own directory (a rename
across file systems is not atomic), flushed to disk, then renamed over the target with
`os.replace`, so a reader sees the old file or the complete new one, never a part.
If anything fails the temporary file is removed and the target is left as it was.

- `write_bytes_atomic(path, data)`: a complete byte string.
- `make_temp_beside(path, prefix, suffix)` + `replace_into_place(tmp, path)`: for a
  writer that streams into the temporary file itself (ffmpeg, h5py;
  robosim.record.files.AtomicFile).
- `replace_dir_into_place(tmp_dir, path)`: a directory built under a temporary name
  (a LeRobot dataset).
"""
from __future__ import annotations

import os
import shutil
import tempfile


def current_umask() -> int:
    """The process umask (read without changing it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def unlink_quietly(path: str) -> None:
    """Remove `path`; a file that is already gone is fine."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_temp_beside(path: str, prefix: str, suffix: str) -> str:
    """Create an empty file `<prefix><random><suffix>` in `path`'s directory, with the
    mode a normal new file gets (0666 less the umask; mkstemp alone makes 0600), and
    return its path. The caller owns it until `replace_into_place` or deletion."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~current_umask())
    except BaseException:
        unlink_quietly(tmp)
        raise
    return tmp


def replace_into_place(tmp: str, path: str) -> None:
    """Rename the finished temporary file `tmp` over `path` and make the rename durable
    (fsync of the directory). On any error `tmp` is removed and the error raised; a
    missing `tmp` (its directory was deleted) raises FileNotFoundError naming both."""
    try:
        if not os.path.exists(tmp):
            raise FileNotFoundError(f"cannot write {path!r}: its temporary file {tmp!r} "
                                    f"disappeared (was the directory deleted?)")
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def replace_dir_into_place(tmp_dir: str, path: str) -> None:
    """Rename the finished directory `tmp_dir` (in `path`'s parent) to `path`, which must
    not exist or be an empty directory, and make the rename durable. On any error
    `tmp_dir` is removed and the error raised."""
    try:
        os.rename(tmp_dir, path)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def write_bytes_atomic(path: str | os.PathLike, data: bytes, *, make_dirs: bool = False,
                       ignore_errors: bool = False) -> bool:
    """Write `data` to `path` atomically and durably (temporary `.NAME.<random>.tmp`
    beside it, fsync, rename, fsync of the directory). Returns True once written.

    make_dirs: create `path`'s missing parent directories first.
    ignore_errors: an OSError (read-only cache directory, full disk) returns False
    instead of raising: for caches, where a failed write only costs recomputation.
    Either way a failed write leaves `path` as it was and no temporary file behind."""
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    tmp = None
    try:
        if make_dirs:
            os.makedirs(directory, exist_ok=True)
        tmp = make_temp_beside(path, f".{name}.", ".tmp")
        fd = os.open(tmp, os.O_WRONLY)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        replace_into_place(tmp, path)
        tmp = None
        return True
    except OSError:
        if not ignore_errors:
            raise
        return False
    finally:
        if tmp is not None:
            unlink_quietly(tmp)
