"""Load a dataset written by `robosim demos export --format lerobot` with LeRobot's own
LeRobotDataset (lerobot 0.4.4), offline; prints what it reads and "OK".

lerobot 0.4.4 pins torch<2.11 and torchvision<0.26, so it cannot live in robosim's venv
(torch 2.13.0): pip would replace torch with a CUDA build. It ran in a throwaway venv:

    python3.11 -m venv /tmp/lerobot_venv
    /tmp/lerobot_venv/bin/pip install /opt/wheels/torch-2.13.0+cpu-*.whl      # robosim's torch build
    /tmp/lerobot_venv/bin/pip install --no-deps lerobot==0.4.4 torchvision==0.25.0 'accelerate>=1.10,<2'
    /tmp/lerobot_venv/bin/pip install 'datasets>=4,<5' 'huggingface-hub>=0.34.2,<0.36' pandas pyarrow av \\
        jsonlines draccus einops pillow packaging termcolor deepdiff psutil pyyaml safetensors
    # PyPI's torchvision is a CUDA build: its compiled ops cannot load on CPU torch. The dataset
    # loader uses only torchvision's Python parts, so in that venv only: move torchvision/_C.so
    # aside and drop `_meta_registrations` from the import line of torchvision/__init__.py.
    HF_HUB_OFFLINE=1 /tmp/lerobot_venv/bin/python examples/results/imitation/lerobot_loader_check.py DATASET_DIR
"""
import sys

import numpy as np
import pyarrow.parquet as pq
from lerobot.datasets.lerobot_dataset import LeRobotDataset

root = sys.argv[1]
ds = LeRobotDataset("robosim/check", root=root, video_backend="pyav")
print(f"{len(ds)} frames, {ds.num_episodes} episodes, fps {ds.fps}, features {sorted(ds.features)}")
table = pq.read_table(f"{root}/data/chunk-000/file-000.parquet").to_pandas()
for index in (0, len(ds) // 2, len(ds) - 1):
    item = ds[index]
    np.testing.assert_array_equal(item["action"].numpy(), table["action"][index])
    np.testing.assert_array_equal(item["observation.environment_state"].numpy(),
                                  table["observation.environment_state"][index])
    shapes = {k: tuple(v.shape) for k, v in item.items() if hasattr(v, "shape")}
    print(f"frame {index}: episode {int(item['episode_index'])}, step {int(item['frame_index'])}, {shapes}")
cameras = [k for k in ds.features if k.startswith("observation.images.")]
chunked = LeRobotDataset("robosim/check", root=root, video_backend="pyav",
                         delta_timestamps={"action": [i / ds.fps for i in range(16)],
                                           **{c: [-1 / ds.fps, 0.0] for c in cameras}})
item = chunked[5]
print(f"delta_timestamps: action chunk {tuple(item['action'].shape)}, "
      f"{ {c: tuple(item[c].shape) for c in cameras} }")
print("OK")
