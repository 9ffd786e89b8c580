"""LeRobot dataset format v3.0 (lerobot 0.4.x): paths, features, statistics, files.

Layout of a dataset directory (lerobot/datasets/utils.py at v0.4.4):
  meta/info.json                           codebase_version "v3.0", fps, robot_type, features
                                           ({dtype, shape, names[, info]}), totals, paths
  meta/stats.json                          per feature: min, max, mean, std, count, q01..q99
  meta/tasks.parquet                       index: task string, column task_index
  meta/episodes/chunk-000/file-000.parquet one row per episode: episode_index, tasks, length,
                                           data/{chunk,file}_index, dataset_{from,to}_index,
                                           videos/<key>/{chunk_index, file_index, from_timestamp,
                                           to_timestamp}, meta/episodes/{chunk,file}_index,
                                           stats/<feature>/<stat>
  data/chunk-000/file-000.parquet          one row per frame: every non-video feature, plus
                                           timestamp, frame_index, episode_index, index, task_index
  videos/<key>/chunk-000/file-000.mp4      every episode's frames of camera <key>, back to back

robosim writes everything into chunk 0, file 0 (LeRobot starts a new file past 100 MB of
data or 200 MB of video; readers follow the per-episode indices either way).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

CODEBASE_VERSION = "v3.0"
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK_FILE + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = "meta/episodes/" + CHUNK_FILE + ".parquet"
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
DEFAULT_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}


def require_pyarrow():
    """pyarrow.parquet, or ImportError saying which extra installs it."""
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        raise ImportError(f"LeRobot datasets need pyarrow and pandas: pip install 'robosim[lerobot]' ({err})") from None
    return pq


def feature_stats(values: np.ndarray) -> dict[str, list]:
    """LeRobot's statistics of one feature: values (T, *shape) numeric -> min, max, mean,
    std, q01, q10, q50, q90, q99 over the first axis (JSON lists of shape `shape`), count [T]."""
    v = np.asarray(values, dtype=np.float64)
    stats = {"min": v.min(0), "max": v.max(0), "mean": v.mean(0), "std": v.std(0), "count": np.array([len(v)])}
    for q in QUANTILES:
        stats[f"q{int(round(q * 100)):02d}"] = np.quantile(v, q, axis=0)
    return {k: s.tolist() for k, s in stats.items()}


def image_stats(frames: np.ndarray) -> dict[str, list]:
    """LeRobot's per-channel statistics of uint8 frames (T, H, W, C): values in [0, 1],
    each statistic of shape (C, 1, 1); count is the number of frames."""
    pixels = np.asarray(frames, dtype=np.float64).reshape(-1, frames.shape[-1]) / 255.0
    stats = feature_stats(pixels)
    stats["count"] = [len(frames)]
    return {k: (v if k == "count" else [[[c]] for c in v]) for k, v in stats.items()}


def arrow_column(values: np.ndarray, dtype: str):
    """A pyarrow array for one feature column: a scalar column for shape (1,), a
    fixed-size list column for shape (n,) (what datasets.Sequence(length=n) writes)."""
    import pyarrow as pa

    values = np.asarray(values)
    scalar = {"float32": pa.float32(), "float64": pa.float64(), "int64": pa.int64(), "bool": pa.bool_()}[dtype]
    if values.ndim == 1:
        return pa.array(values, type=scalar)
    flat = pa.array(values.reshape(-1), type=scalar)
    return pa.FixedSizeListArray.from_arrays(flat, values.shape[1])


def write_parquet(path: str, columns: dict[str, Any]) -> None:
    """Write a dict of pyarrow arrays (or python lists) as one parquet file (dirs made)."""
    import pyarrow as pa

    pq = require_pyarrow()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table(columns), path, compression="snappy")


def write_tasks(path: str, tasks: list[str]) -> None:
    """meta/tasks.parquet as LeRobot writes it: a pandas frame indexed by the task string."""
    import pandas as pd

    os.makedirs(os.path.dirname(path), exist_ok=True)
    pd.DataFrame({"task_index": list(range(len(tasks)))}, index=tasks).to_parquet(path)


def write_json(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=4)


def video_info(height: int, width: int, fps: int) -> dict[str, Any]:
    """features[key]["info"] of an H.264 yuv420p mp4 (lerobot's get_video_info keys)."""
    return {"video.height": height, "video.width": width, "video.codec": "h264", "video.pix_fmt": "yuv420p",
            "video.is_depth_map": False, "video.fps": fps, "video.channels": 3, "has_audio": False}


class Mp4Stream:
    """One camera's mp4: uint8 (H, W, 3) frames appended in order, H.264 yuv420p at `fps`
    (imageio-ffmpeg's ffmpeg), every frame a key frame so readers can seek to any timestamp."""

    def __init__(self, path: str, height: int, width: int, fps: int):
        import imageio_ffmpeg

        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.frames = 0
        self._writer = imageio_ffmpeg.write_frames(path, (width, height), fps=fps, codec="libx264",
                                                   pix_fmt_out="yuv420p", macro_block_size=1,
                                                   output_params=["-g", "1"], ffmpeg_log_level="error")
        self._writer.send(None)

    def add(self, frame: np.ndarray) -> None:
        self._writer.send(np.ascontiguousarray(frame))
        self.frames += 1

    def close(self) -> None:
        """Flush and end ffmpeg (idempotent)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


@dataclass
class DatasetFiles:
    """A LeRobot v3.0 dataset as read from disk, with where each part came from.

    columns: frame columns as numpy, shape (F,) or (F, n) (an object array when a list
    column is ragged); rows: episode rows sorted by episode_index; row_files[k]: the
    parquet file (relative to `root`) of rows[k]; frame_files: (file, first, end) frame
    ranges of the data files, in frame order."""

    root: str
    info: dict
    columns: dict[str, np.ndarray]
    rows: list[dict]
    row_files: list[str]
    frame_files: list[tuple[str, int, int]]

    def frame_file(self, index: int) -> str:
        """The data file (relative to `root`) holding frame `index` (the last one past the end)."""
        return next((f for f, lo, hi in self.frame_files if lo <= index < hi), self.frame_files[-1][0])


def read_dataset(directory: str, arg: str = "dataset") -> DatasetFiles:
    """Read a LeRobot v3.0 dataset directory: ValueError naming `arg` and the file when
    it is not one (no or unreadable meta/info.json, another codebase_version, fps,
    features or data_path missing, unreadable parquet). Contents are checked by
    robosim.demos.lerobot_checks."""
    if not isinstance(directory, (str, os.PathLike)) or not os.path.isdir(directory):
        raise ValueError(f"{arg} must be an existing LeRobot dataset directory, got {directory!r}")
    directory = os.fspath(directory)
    info_path = os.path.join(directory, INFO_PATH)
    try:
        with open(info_path) as f:
            info = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"{arg} must be a LeRobot dataset (a readable {INFO_PATH}), got {directory!r} "
                         f"({err})") from None
    if not isinstance(info, dict) or info.get("codebase_version") != CODEBASE_VERSION:
        version = info.get("codebase_version") if isinstance(info, dict) else None
        raise ValueError(f"{arg} must be a LeRobot {CODEBASE_VERSION} dataset, got codebase_version {version!r} "
                         f"in {info_path!r}")
    for key in ("fps", "features", "data_path"):
        if key not in info:
            raise ValueError(f"{arg} must have {key!r} in {info_path!r}, got keys {sorted(info)}")
    pq = require_pyarrow()
    episodes, row_files = _read_tables(pq, directory, "meta/episodes", arg)
    data, data_files = _read_tables(pq, directory, "data", arg)
    rows = [dict(row, _file=f) for table, f in zip(episodes, row_files) for row in table.to_pylist()]
    rows.sort(key=lambda r: (not isinstance(r.get("episode_index"), int), r.get("episode_index", 0)))
    frame_files, start = [], 0
    for table, f in zip(data, data_files):
        frame_files.append((f, start, start + table.num_rows))
        start += table.num_rows
    columns = {}
    try:
        import pyarrow as pa

        table = pa.concat_tables(data)
    except (ValueError, TypeError) as err:   # pyarrow.ArrowInvalid is a ValueError
        raise ValueError(f"{arg} data files {data_files} must share one schema, got {err}") from None
    for name in table.column_names:
        columns[name] = _to_numpy(table.column(name).combine_chunks())
    return DatasetFiles(directory, info, columns, [{k: v for k, v in r.items() if k != "_file"} for r in rows],
                        [r["_file"] for r in rows], frame_files)


def _to_numpy(column) -> np.ndarray:
    """A frame column as numpy: (F,) for scalars, (F, n) for lists of equal length n,
    an object array (F,) for ragged lists."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(column.type):   # what LeRobot writes for shape (n,)
        return column.flatten().to_numpy(zero_copy_only=False).reshape(len(column), -1)
    values = column.to_pylist()
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        lengths = {len(v) if v is not None else -1 for v in values}
        if len(lengths) != 1 or -1 in lengths:
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out
    return np.asarray([np.nan if v is None else v for v in values]) if None in values else np.asarray(values)


def _read_tables(pq, directory: str, sub: str, arg: str) -> tuple[list, list[str]]:
    """(tables, paths relative to directory) of every chunk-*/file-*.parquet under
    directory/sub, in path order."""
    root = os.path.join(directory, sub)
    paths = sorted(os.path.join(c, f) for c in (os.listdir(root) if os.path.isdir(root) else [])
                   if os.path.isdir(os.path.join(root, c)) for f in os.listdir(os.path.join(root, c))
                   if f.endswith(".parquet"))
    if not paths:
        raise ValueError(f"{arg} must have parquet files under {root!r}, got none")
    tables = []
    for p in paths:
        try:
            tables.append(pq.read_table(os.path.join(root, p)))
        except (OSError, ValueError) as err:
            raise ValueError(f"{arg} has an unreadable parquet file {os.path.join(sub, p)!r}: {err}") from None
    return tables, [os.path.join(sub, p) for p in paths]
