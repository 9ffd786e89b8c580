"""Where each env sits inside the shared physics world.

All envs of a batch live in ONE PhysX system, so they must be spatially apart. Their
origins are placed on a grid whose coordinates all lie in the float32 binade
[64, 128) m. Inside one binade every float32 has the same spacing (ulp = 2**-17 m, about
7.6 um) and the grid points are multiples of 0.5 m, so `fl32(local + origin) - origin`
rounds `local` the same way for every env. That is what makes env i of a large batch
start bit-for-bit like env 0 of a 1-env batch with the same seed (docs/design.md, Public contract):
positions read back in the env's own frame do not depend on where the env sits.
"""
from __future__ import annotations

import torch

GRID_START = 67.0      # first origin coordinate (m); keeps a 3 m margin inside [64, 128)
GRID_SPACING = 3.5     # distance between neighbouring env origins (m)
GRID_SIDE = 16         # origins per axis: 67 + 15 * 3.5 = 119.5 keeps a 3 m margin
MAX_ENVS_PER_SYSTEM = GRID_SIDE * GRID_SIDE


def env_origins(num_envs: int) -> torch.Tensor:
    """World-frame origins of the envs, float64 (num_envs, 3), z = 0.

    Raises ValueError when num_envs does not fit on one grid of MAX_ENVS_PER_SYSTEM."""
    if not 1 <= num_envs <= MAX_ENVS_PER_SYSTEM:
        raise ValueError(
            f"num_envs must be in [1, {MAX_ENVS_PER_SYSTEM}] for the physx_cpu backend, got {num_envs}"
        )
    idx = torch.arange(num_envs, dtype=torch.float64)
    x = GRID_START + GRID_SPACING * (idx % GRID_SIDE)
    y = GRID_START + GRID_SPACING * torch.div(idx, GRID_SIDE, rounding_mode="floor")
    return torch.stack([x, y, torch.zeros_like(x)], dim=1)
