"""Checks of a LeRobot v3.0 dataset before robosim imports it (robosim.demos.lerobot).

Every check runs before anything is written. Each error is a ValueError that names the
dataset, the file, the episode (and frame) and the field, what was expected and what
was given. `resimulate` re-runs an episode's actions from its first recorded state and
`divergence` compares the result with the recorded states.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robosim.demos import lerobot_format as fmt
from robosim.envs.checks import is_int

HEADER_KEYS = ("robosim_version", "task_id", "num_envs", "state_dim", "action_dim", "sim_backend", "control_mode")
ROBOSIM_ROW_FIELDS = ("robosim/final_state", "robosim/seed", "robosim/env_index", "robosim/complete")


@dataclass
class EpisodeFrames:
    """Frames [start, end) of the dataset's episode `index` (an episodes-table row)."""

    index: int
    start: int
    end: int
    row: dict



def check_info(data: fmt.DatasetFiles, where: str) -> None:
    """features must be a dict of {dtype, shape: list, ...} dicts; fps a positive number."""
    path = f"{where} {fmt.INFO_PATH}"
    features = data.info["features"]
    if not isinstance(features, dict):
        raise ValueError(f"{path} field 'features' must be a dict of feature name -> {{dtype, shape, names}}, "
                         f"got {type(features).__name__}")
    for name, feature in features.items():
        if not isinstance(feature, dict) or not isinstance(feature.get("shape"), list):
            raise ValueError(f"{path} field 'features' entry {name!r} must be a dict with a list 'shape', "
                             f"got {feature!r:.100}")
    fps = data.info["fps"]
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not np.isfinite(fps) or fps <= 0:
        raise ValueError(f"{path} field 'fps' must be a positive number, got {fps!r}")


def robosim_header(data: fmt.DatasetFiles, where: str) -> dict | None:
    """The trajectory header stored in info.json's "robosim" entry (None when absent),
    validated: every key present, a registered task, positive sizes, a valid EnvSpec."""
    from robosim.envs import list_tasks
    from robosim.envs.spec import EnvSpec

    meta = data.info.get("robosim")
    if meta is None:
        return None
    path = f"{where} {fmt.INFO_PATH} field 'robosim'"
    if not isinstance(meta, dict):
        raise ValueError(f"{path} must be a dict (what robosim's export writes), got {type(meta).__name__}")
    spec_key = "env_spec" if "env_spec" in meta else "env_kwargs"   # env_kwargs: exports before EnvSpec
    missing = [k for k in (*HEADER_KEYS, spec_key) if k not in meta]
    if missing:
        raise ValueError(f"{path} must have the keys {[*HEADER_KEYS, 'env_spec']}, missing {missing}")
    if meta["task_id"] not in list_tasks():
        raise ValueError(f"{path} 'task_id' must be one of {list_tasks()}, got {meta['task_id']!r}")
    for key in ("num_envs", "state_dim", "action_dim"):
        if not is_int(meta[key]) or meta[key] < 1:
            raise ValueError(f"{path} {key!r} must be a positive int, got {meta[key]!r}")
    if not isinstance(meta[spec_key], dict):
        raise ValueError(f"{path} {spec_key!r} must be a dict, got {type(meta[spec_key]).__name__}")
    if spec_key == "env_spec":
        try:
            EnvSpec.from_dict({**meta["env_spec"], "task_id": meta["task_id"]}, arg=f"{path} 'env_spec'")
        except TypeError as err:
            raise ValueError(str(err)) from None
    return {k: meta[k] for k in (*HEADER_KEYS, spec_key)}


def check_feature(data: fmt.DatasetFiles, name: str, size: int, what: str, where: str) -> None:
    """info.json must declare feature `name` with shape [size]."""
    feature = data.info["features"].get(name)
    if feature is None:
        raise ValueError(f"{where} {fmt.INFO_PATH} must have the feature {name!r} ({what}), got features "
                         f"{sorted(data.info['features'])}")
    if list(feature["shape"]) != [size]:
        raise ValueError(f"{where} {fmt.INFO_PATH} feature {name!r} must have shape [{size}] ({what}), "
                         f"got {feature['shape']}")


def frame_column(data: fmt.DatasetFiles, name: str, width: int | None, where: str) -> np.ndarray:
    """Column `name` as float64, (F, width), or (F,) for width None; every value finite.
    ValueError naming the data file, episode, frame and field otherwise."""
    if name not in data.columns:
        raise ValueError(f"{where} data files {[f for f, _, _ in data.frame_files]} must have the column "
                         f"{name!r}, got columns {sorted(data.columns)}")
    col = data.columns[name]
    want = "1 value" if width is None else f"{width} values"
    if col.dtype == object:   # a ragged list column: name the first frame that differs
        bad = next(f for f, v in enumerate(col) if v is None or np.ndim(v) != 1 or len(v) != (width or 1))
        got = None if col[bad] is None else np.shape(col[bad])
        raise ValueError(f"{_at(data, bad, where)} field {name!r} must have {want} per frame, got shape {got}")
    if not (np.issubdtype(col.dtype, np.number) or col.dtype == bool):
        raise ValueError(f"{_at(data, 0, where)} field {name!r} must be numeric, got dtype {col.dtype}")
    col = col.astype(np.float64).reshape(len(col), -1)
    if col.shape[1] != (width or 1):
        raise ValueError(f"{_at(data, 0, where)} field {name!r} must have {want} per frame (info.json's "
                         f"features), got {col.shape[1]}")
    finite = np.isfinite(col).all(axis=1)
    if not finite.all():
        bad = int(np.argmin(finite))
        raise ValueError(f"{_at(data, bad, where)} field {name!r} must be finite, got {col[bad].tolist()}")
    return col if width is not None else col[:, 0]


def _at(data: fmt.DatasetFiles, frame: int, where: str) -> str:
    """'<where> <data file> episode E frame F' for dataset frame `frame`."""
    episode = data.columns.get("episode_index")
    label = f"episode {episode[frame]} " if episode is not None and frame < len(episode) else ""
    return f"{where} {data.frame_file(frame)} {label}frame {frame}"


def episode_frames(data: fmt.DatasetFiles, header: dict | None, where: str) -> list[EpisodeFrames]:
    """Each episodes-table row checked: integer indices, 0 <= dataset_from_index <
    dataset_to_index <= frames, length (when given) = to - from, the frames' episode_index
    column equal to the row's; with a robosim header, its robosim/* fields too."""
    frames = len(next(iter(data.columns.values()))) if data.columns else 0
    episode_index = frame_column(data, "episode_index", None, where)
    out, seen = [], set()
    for row, file in zip(data.rows, data.row_files):
        at = f"{where} {file} episode {row.get('episode_index')!r}"
        k = row.get("episode_index")
        if not is_int(k) or k < 0 or k in seen:
            raise ValueError(f"{at} field 'episode_index' must be a new int >= 0, got {k!r}")
        seen.add(k)
        lo, hi = row.get("dataset_from_index"), row.get("dataset_to_index")
        if not is_int(lo) or not is_int(hi) or not 0 <= lo < hi:
            raise ValueError(f"{at} fields 'dataset_from_index', 'dataset_to_index' must be ints with "
                             f"0 <= from < to, got {lo!r}, {hi!r}")
        if hi > frames:
            raise ValueError(f"{at} field 'dataset_to_index' must be at most {frames} (the frames in the data "
                             f"files), got {hi}")
        if row.get("length") is not None and row["length"] != hi - lo:
            raise ValueError(f"{at} field 'length' must be dataset_to_index - dataset_from_index = {hi - lo}, "
                             f"got {row['length']!r}")
        wrong = np.flatnonzero(episode_index[lo:hi] != k)
        if wrong.size:
            f = lo + int(wrong[0])
            raise ValueError(f"{at} frames [{lo}, {hi}) must have episode_index {k}, got {episode_index[f]:g} "
                             f"at frame {f} ({data.frame_file(f)})")
        if header is not None:
            _check_robosim_row(row, header, at)
        out.append(EpisodeFrames(int(k), int(lo), int(hi), row))
    if not out:
        raise ValueError(f"{where} {data.row_files and data.row_files[0]} must list at least one episode, got none")
    return out


def _check_robosim_row(row: dict, header: dict, at: str) -> None:
    missing = [f for f in ROBOSIM_ROW_FIELDS if row.get(f) is None]
    if missing:
        raise ValueError(f"{at} must have the fields {list(ROBOSIM_ROW_FIELDS)} (its info.json has a 'robosim' "
                         f"entry), missing {missing}")
    final = np.asarray(row["robosim/final_state"], dtype=object)
    if final.shape != (header["state_dim"],) or not all(isinstance(v, (int, float)) for v in final):
        raise ValueError(f"{at} field 'robosim/final_state' must be {header['state_dim']} numbers, got shape "
                         f"{final.shape}")
    if not np.isfinite(final.astype(np.float64)).all():
        raise ValueError(f"{at} field 'robosim/final_state' must be finite, got a NaN or inf")
    if not is_int(row["robosim/seed"]) or row["robosim/seed"] < -1:
        raise ValueError(f"{at} field 'robosim/seed' must be an int >= -1, got {row['robosim/seed']!r}")
    if not is_int(row["robosim/env_index"]) or not 0 <= row["robosim/env_index"] < header["num_envs"]:
        raise ValueError(f"{at} field 'robosim/env_index' must be an int in [0, {header['num_envs'] - 1}], "
                         f"got {row['robosim/env_index']!r}")


def resimulate(env, states0: np.ndarray, actions: np.ndarray) -> dict[str, np.ndarray]:
    """Re-run `actions` (T, A) in env slot 0 from `states0` (S,), as `robosim replay`
    starts an unseeded episode (reset, then set_state). Returns states (T+1, S) float32
    (get_state after set_state, then after each step), rewards (T,) float32, success,
    terminated, truncated (T,) bool."""
    import torch

    idx = torch.tensor([0])
    env.reset(options={"env_idx": idx})
    env.set_state(torch.from_numpy(states0[None].astype(np.float32)), env_idx=idx)
    states = [env.get_state()[0].cpu().numpy()]
    out: dict[str, list] = {"rewards": [], "success": [], "terminated": [], "truncated": []}
    for action in actions:
        _, reward, terminated, truncated, info = env.step(torch.from_numpy(action[None].astype(np.float32)))
        states.append(env.get_state()[0].cpu().numpy())
        for key, value in (("rewards", reward), ("success", info["success"]), ("terminated", terminated),
                           ("truncated", truncated)):
            out[key].append(value[0].item())
    return {"states": np.stack(states).astype(np.float32), "rewards": np.asarray(out["rewards"], np.float32),
            **{k: np.asarray(out[k], bool) for k in ("success", "terminated", "truncated")}}


def divergence(recorded: np.ndarray, simulated: np.ndarray, tolerance: float) -> tuple[int, int, float] | None:
    """(step, state index, |difference|) of the first recorded state (T, S) farther than
    `tolerance` from the simulated one, or None when every state is within it."""
    error = np.abs(recorded.astype(np.float64) - simulated[: len(recorded)].astype(np.float64))
    over = np.argwhere(error > tolerance)
    if not len(over):
        return None
    step, index = (int(v) for v in over[0])
    return step, index, float(error[step, index])
