"""mp4 video of batched envs: the N frames of a step tiled in a grid, one overlay per tile.

    with VideoWriter("eval.mp4", fps=20) as video:
        video.add_batch(env.render(), [["env 0", "step 3"], ...])

H.264 through imageio-ffmpeg (which ships its own ffmpeg binary). Written atomically
(robosim.record.files): until close() the file lives under a temporary name; if
finishing fails (full disk, broken ffmpeg pipe) no file appears under the final name.
The mp4 is fragmented (a self-contained fragment per key frame, every FRAGMENT_FRAMES
frames), so after a SIGKILL the temporary file plays up to its last fragment and
`robosim recover` can keep it.
"""
from __future__ import annotations

import errno
import os
from collections.abc import Sequence

import numpy as np
import torch

from robosim.record.files import AtomicFile, check_output_path
from robosim.sensors.tiling import draw_text, tile_grid

VIDEO_SUFFIXES = (".mp4",)
FRAGMENT_FRAMES = 20
FRAGMENTED_MP4 = ["-movflags", "frag_keyframe+empty_moov", "-g", str(FRAGMENT_FRAMES)]


def mp4_is_complete(path: str) -> bool:
    """True when the top-level MP4 boxes of `path` tile the file exactly, a `moov` box is
    present and, for a fragmented mp4, the closing `mfra` box was written."""
    import struct

    try:
        size = os.path.getsize(path)
        boxes, offset = [], 0
        with open(path, "rb") as f:
            while offset < size:
                f.seek(offset)
                head = f.read(16)
                if len(head) < 8:
                    return False
                length, kind = struct.unpack(">I4s", head[:8])
                if length == 1:
                    length = struct.unpack(">Q", head[8:16])[0] if len(head) == 16 else 0
                elif length == 0:
                    length = size - offset
                if length < 8:
                    return False
                boxes.append(kind)
                offset += length
    except OSError:
        return False
    return offset == size and b"moov" in boxes and (b"moof" not in boxes or boxes[-1] == b"mfra")


def _free_space(path: str) -> str:
    try:
        st = os.statvfs(os.path.dirname(path))
    except OSError as err:
        return err.strerror or str(err)
    free = st.f_bavail * st.f_frsize
    return "No space left on device" if free < 64 * 1024 else f"write error; {free} bytes free"


class VideoWriter:
    """Append uint8 (H, W, 3) frames to an mp4 at `path`; frames must keep one size.

    fps: frames per second of playback (int > 0)."""

    def __init__(self, path: str, fps: int = 20, arg: str = "video"):
        self.path = check_output_path(arg, path, VIDEO_SUFFIXES)
        if isinstance(fps, bool) or not isinstance(fps, (int, np.integer)) or not 1 <= fps <= 240:
            raise ValueError(f"fps must be an int in [1, 240], got {fps!r}")
        self.fps = int(fps)
        self.frames_written = 0
        self._writer = None
        self._shape: tuple[int, ...] | None = None
        self._file = AtomicFile(self.path, self._close_writer, arg)   # claims path: a second writer is refused

    def _close_writer(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        elif self.frames_written == 0:
            self._write_placeholder()
        else:
            return
        # imageio does not report ffmpeg's exit status: check the file's structure instead
        if not mp4_is_complete(self._file.tmp_path):
            raise OSError(errno.EIO, f"cannot write video {self.path!r}: ffmpeg could not finish the file "
                                     f"({_free_space(self._file.tmp_path)}); no file was written")

    def _write_placeholder(self) -> None:
        """An mp4 with no frame cannot be played; one black frame marks an empty run."""
        import imageio

        with imageio.get_writer(self._file.tmp_path, format="FFMPEG", fps=self.fps, codec="libx264",
                                macro_block_size=1, ffmpeg_log_level="error") as w:
            w.append_data(np.zeros((16, 16, 3), np.uint8))

    def add_frame(self, frame) -> None:
        """Append one uint8 (H, W, 3) frame (odd sizes are padded to even for H.264)."""
        frame = frame.detach().cpu().numpy() if isinstance(frame, torch.Tensor) else np.asarray(frame)
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(f"frame must be uint8 of shape (H, W, 3), got {frame.dtype} {frame.shape}")
        if self._file.done:
            raise ValueError(f"video {self.path!r} is closed; frames can no longer be added")
        h, w = frame.shape[:2]
        frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)))
        if self._shape is None:
            import imageio

            self._shape = frame.shape
            self._writer = imageio.get_writer(self._file.tmp_path, format="FFMPEG", fps=self.fps,
                                              codec="libx264", quality=7, macro_block_size=1,
                                              ffmpeg_log_level="error", output_params=FRAGMENTED_MP4)
        elif frame.shape != self._shape:
            raise ValueError(f"frame must keep the video's size {self._shape}, got {frame.shape}")
        self._writer.append_data(frame)
        self.frames_written += 1

    def add_batch(self, frames, overlays: Sequence[Sequence[str]] | None = None, cols: int | None = None) -> None:
        """Tile uint8 (N, H, W, 3) frames (env i in row-major cell i) with overlays[i]
        (lines of text drawn in tile i's top-left corner), and append the picture."""
        frames = frames.detach().cpu().numpy() if isinstance(frames, torch.Tensor) else np.asarray(frames)
        if overlays is not None:
            if len(overlays) != len(frames):
                raise ValueError(f"overlays must have one entry per frame ({len(frames)}), got {len(overlays)}")
            frames = np.stack([draw_text(f, lines) for f, lines in zip(frames, overlays)])
        self.add_frame(tile_grid(frames, cols))

    def close(self) -> None:
        """Finish the mp4 and move it to `path` (idempotent)."""
        self._file.commit()

    def discard(self) -> None:
        """Delete the temporary file; nothing appears under `path`."""
        self._file.discard()

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
