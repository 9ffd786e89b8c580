"""Two Ray nodes on one machine (ray.cluster_utils.Cluster: a head and a worker node,
each a separate raylet with its own CPUs and object store): the driver connects by
address, the workers land on different nodes, and the sharded env and the
distributed evaluation give what one process gives."""
from __future__ import annotations

import os

import pytest
import ray
import torch
from ray.cluster_utils import Cluster

import robosim
from robosim.distributed.eval import evaluate_on_workers
from robosim.record.evaluate import evaluate
from robosim.record.policies import scripted
from robosim.record.trajectory import TrajectoryFile
from robosim.record.wrapper import RecordEpisode

from .conftest import assert_same_tree

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers

NODE = {"num_cpus": 1, "object_store_memory": 80 * 2**20}


@pytest.fixture(scope="module")
def two_nodes():
    if ray.is_initialized():
        ray.shutdown()
    os.environ.setdefault("RAY_worker_niceness", "0")
    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def test_workers_spread_over_both_nodes_and_match_one_process(two_nodes):
    venv = robosim.make_vec("PickCube-v1", num_envs=4, workers=2, ray_address=two_nodes.address,
                            worker_cpus=1, max_episode_steps=5, physics_isolation="separate")
    assert len({node for node in venv.worker_nodes}) == 2
    assert {n["NodeID"] for n in ray.nodes() if n["Alive"]} == set(venv.worker_nodes)
    ref = robosim.make_vec("PickCube-v1", num_envs=4, max_episode_steps=5, physics_isolation="separate")
    assert_same_tree(venv.reset(seed=9), ref.reset(seed=9), "reset")
    gen = torch.Generator().manual_seed(1)
    for t in range(12):
        action = torch.rand((4, ref.single_action_space.shape[0]), generator=gen) * 2 - 1
        assert_same_tree(venv.step(action), ref.step(action), f"step {t}")
    venv.close()
    ref.close()


def test_distributed_eval_writes_the_files_one_process_writes(two_nodes, tmp_path):
    kwargs = dict(render_size=(64, 64), physics_isolation="separate")
    result = evaluate_on_workers("PickCube-v1", "robosim.record.policies:scripted", episodes=2, num_envs=2,
                                 workers=2, seed=4, video=str(tmp_path / "ray.mp4"),
                                 trajectory=str(tmp_path / "ray.h5"), worker_cpus=1, build_seed=4, **kwargs)
    env = robosim.make("PickCube-v1", num_envs=2, render_mode="rgb_array", seed=4, **kwargs)
    with RecordEpisode(env, video=str(tmp_path / "one.mp4"), trajectory=str(tmp_path / "one.h5")) as recorder:
        reference = evaluate(recorder, scripted(recorder), 2, seed=4)
    assert (result.success, result.returns, result.lengths) == (reference.success, reference.returns,
                                                                reference.lengths)
    ray_file, one_file = TrajectoryFile(str(tmp_path / "ray.h5")), TrajectoryFile(str(tmp_path / "one.h5"))
    assert ray_file.attrs == one_file.attrs and len(ray_file) == len(one_file) == 2
    for k in range(2):
        got, want = ray_file.episode(k), one_file.episode(k)
        assert (got.env_index, got.seed, got.complete) == (want.env_index, want.seed, want.complete)
        for name in ("states", "actions", "rewards", "success", "terminated", "truncated"):
            assert (getattr(got, name) == getattr(want, name)).all(), (k, name)
    ray_frames = _frames(tmp_path / "ray.mp4")
    one_frames = _frames(tmp_path / "one.mp4")
    assert ray_frames.shape == one_frames.shape   # same tiles, same number of pictures
    assert (ray_frames == one_frames).all()         # same states rendered: the same pictures


def _frames(path):
    import imageio
    import numpy as np

    with imageio.get_reader(str(path), format="FFMPEG") as reader:
        return np.stack([frame for frame in reader])   # list(reader) trips on its len = inf
