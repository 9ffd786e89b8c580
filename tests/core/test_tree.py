"""robosim.core.tree: one key order (depth-first, dict insertion order) for flattening
observations and listing leaves; the generic tree helpers."""
from __future__ import annotations

import numpy as np
import torch

from robosim.core.tree import flatten_obs, leading_dims, leaf_items, per_env, to_numpy_tree, tree_map, write_rows


def test_flatten_obs_follows_insertion_order_depth_first_not_sorted_keys():
    obs = {"extra": {"tcp_pose": torch.tensor([[1.0, 2.0]]), "goal_pos": torch.tensor([[3.0]])},
           "agent": {"qvel": torch.tensor([[4.0]]), "qpos": torch.tensor([[[5.0, 6.0]]])}}
    flat = flatten_obs(obs)
    assert flat.dtype == torch.float32
    assert flat.tolist() == [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]
    assert [path for path, _ in leaf_items(obs)] == ["extra/tcp_pose", "extra/goal_pos", "agent/qvel", "agent/qpos"]


def test_flatten_obs_casts_leaves_to_float32_and_takes_a_single_array():
    obs = {"ok": torch.tensor([[True], [False]]), "count": np.array([[3], [4]], dtype=np.int64)}
    assert flatten_obs(obs).tolist() == [[1.0, 3.0], [0.0, 4.0]] and flatten_obs(obs).dtype == torch.float32
    single = torch.arange(8, dtype=torch.float64).reshape(2, 2, 2)
    assert flatten_obs(single).tolist() == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    assert list(leaf_items(single)) == [("", single)]


def test_leaf_items_walks_a_dict_space_in_its_own_order():
    import gymnasium as gym

    box = gym.spaces.Box(-1.0, 1.0, (2,))
    inner = gym.spaces.Dict({"b": box, "a": box}, sort_keys=False)
    space = gym.spaces.Dict({"extra": inner, "agent": box}, sort_keys=False)
    assert [(path, leaf) for path, leaf in leaf_items(space)] == [("extra/b", box), ("extra/a", box), ("agent", box)]


def test_tree_map_leading_dims_and_per_env():
    tree = {"a": torch.zeros(3, 2), "b": (np.ones(3), "label"), "c": 7}
    doubled = tree_map(lambda x: x + 1, tree)
    assert doubled["a"].tolist() == [[1.0, 1.0]] * 3 and doubled["b"][0].tolist() == [2.0] * 3
    assert doubled["b"][1] == "label" and doubled["c"] == 7
    assert leading_dims(tree) == {3}
    rows = per_env({"a": torch.arange(3)}, 3)
    assert [r["a"].item() for r in rows] == [0, 1, 2]
    assert per_env("same", 2) == ("same", "same")
    wrong_size = torch.arange(4)
    assert all(row is wrong_size for row in per_env(wrong_size, 3))   # not batched for 3 envs: repeated


def test_to_numpy_tree():
    out = to_numpy_tree({"x": torch.tensor([1.5], requires_grad=True), "y": (torch.tensor([2]), 3)})
    assert isinstance(out["x"], np.ndarray) and out["x"].tolist() == [1.5]
    assert isinstance(out["y"][0], np.ndarray) and out["y"][1] == 3


def test_flatten_obs_of_the_state_dict_is_the_state_obs():
    """The one order is the env's: flattening a state_dict obs gives the `state` obs bit for bit."""
    import robosim

    flat = {}
    for mode in ("state", "state_dict"):
        env = robosim.make("PickCube-v1", num_envs=2, obs_mode=mode)
        obs, _ = env.reset(seed=3)
        flat[mode] = obs if mode == "state" else flatten_obs(obs)
        env.close()
    assert flat["state"].dtype == torch.float32 and torch.equal(flat["state_dict"], flat["state"])


def test_write_rows_fills_every_leaf_with_its_dtype():
    buffers = {"obs": {"pos": torch.zeros(3, 4, 2)}, "done": torch.zeros(3, 4, dtype=torch.bool)}
    write_rows(buffers, 1, {"obs": {"pos": torch.ones(4, 2, dtype=torch.float64)}, "done": torch.tensor([1, 0, 0, 1])})
    assert buffers["obs"]["pos"][1].eq(1).all() and buffers["obs"]["pos"][[0, 2]].eq(0).all()
    assert buffers["done"][1].tolist() == [True, False, False, True] and buffers["done"].dtype == torch.bool
    rows, cols = torch.tensor([0, 2]), torch.tensor([3, 0])
    write_rows(buffers, (rows, cols), {"obs": {"pos": torch.full((2, 2), 7.0)}, "done": torch.tensor([True, True])})
    assert buffers["obs"]["pos"][0, 3].tolist() == [7.0, 7.0] and buffers["obs"]["pos"][2, 0].tolist() == [7.0, 7.0]
    assert int(buffers["done"].sum()) == 4
