"""Camera obs rendered on the GPU: the segmentation mask of the cube sits where the
cube's position projects through the reported camera parameters. physx_cpu renders
with the GPU's Vulkan driver; physx_cuda also takes its poses from the GPU buffers."""
from __future__ import annotations

import pytest
import torch

import robosim

N = 4
SIZE = 128


def _check_cube_in_segmentation(backend: str) -> None:
    env = robosim.make("PickCube-v1", num_envs=N, obs_mode="segmentation", sim_backend=backend,
                       sensor_configs={"width": SIZE, "height": SIZE})
    try:
        obs, _ = env.reset(seed=0)
        for _ in range(2):      # the cube is where physics has it after steps, too
            obs, *_ = env.step(torch.zeros(N, *env.single_action_space.shape, device=env.device))
        seg = obs["sensor_data"]["base_camera"]["segmentation"][..., 0]
        param = obs["sensor_param"]["base_camera"]
        assert seg.device == env.device and param["extrinsic_cv"].device == env.device
        cube_id = env.cameras.segmentation_ids["cube"]
        cube = env.task.cube.pose()[:, :3]                                   # env frame
        cam = param["extrinsic_cv"] @ torch.cat([cube, torch.ones(N, 1, device=cube.device)], 1)[..., None]
        uvw = (param["intrinsic_cv"] @ cam)[..., 0]
        uv = uvw[:, :2] / uvw[:, 2:]                                        # (N, 2) pixels (x right, y down)
        for i in range(N):
            mask = seg[i] == cube_id
            assert mask.sum() >= 4, f"env {i}: cube hardly visible ({int(mask.sum())} px)"
            ys, xs = torch.nonzero(mask, as_tuple=True)
            centroid = torch.stack([xs.float().mean() + 0.5, ys.float().mean() + 0.5])
            assert (centroid - uv[i]).abs().max() < 3.0, \
                f"env {i}: mask at {centroid.tolist()}, projection {uv[i].tolist()}"
    finally:
        env.close()


def test_segmentation_matches_projection_physx_cpu():
    _check_cube_in_segmentation("physx_cpu")


@pytest.mark.physx_gpu
def test_segmentation_matches_projection_physx_cuda():
    _check_cube_in_segmentation("physx_cuda")
