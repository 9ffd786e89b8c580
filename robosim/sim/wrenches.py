"""Held external wrenches: a constant force and torque on a rigid body, per env.

`sim.wrenches.set(view, wrench, env_idx)` holds wrench float32 (M, 6) = [fx, fy, fz, tx,
ty, tz] (N, N m; world axes, which are the env's axes) on the centre of mass of env_idx's
body of `view` (an ActorView or an object pool's body in play) before every physics
substep, until it is set again or `clear(env_idx)` (every reset clears it:
BaseEnv's randomization draws it anew). PhysX forgets a force after each substep, so the
wrench is re-applied at every one. Kinematic and static bodies are refused, and so is
env_idx other than ints in [0, N) and a component beyond MAX_WRENCH: PhysX silently
drops a force of 1e30 N (measured, SAPIEN 3.0.3: the body did not move), and no
manipulation load comes near 1e6 N. A Wrenches of a closed scene raises ValueError.
physx_cpu only (the GPU backends refuse the `external_force` term at make).
"""
from __future__ import annotations

import numpy as np
import sapien
import torch

from robosim.sim.contacts import env_index

MAX_WRENCH = 1e6   # N (force) and N m (torque), per component


class Wrenches:
    """The held wrenches of one SimScene (reach it as `sim.wrenches`)."""

    def __init__(self, sim) -> None:
        self._sim = sim
        self._held: dict[str, tuple[object, torch.Tensor]] = {}   # view name -> (view, (N, 6) float32)

    def get(self, view) -> torch.Tensor:
        """float32 (N, 6) wrench held on `view`'s body in every env (zeros where none)."""
        self._sim.check_open("sim.wrenches")
        held = self._held.get(view.name)
        return held[1].clone() if held is not None else torch.zeros(self._sim.num_envs, 6)

    def set(self, view, wrench: torch.Tensor, env_idx: torch.Tensor) -> None:
        """Hold `wrench` (M, 6) on env_idx's (M,) bodies of `view` (int indices in [0, N))
        from the next substep on; every component within +-MAX_WRENCH."""
        self._sim.check_open("sim.wrenches")
        env_idx = torch.tensor(env_index(env_idx, self._sim.num_envs), dtype=torch.int64)
        wrench = torch.as_tensor(wrench, dtype=torch.float32).cpu()
        if wrench.shape != (len(env_idx), 6):
            raise ValueError(f"wrench must have shape ({len(env_idx)}, 6) [force N, torque N m], one row per env "
                             f"in env_idx, got shape {tuple(wrench.shape)}")
        if wrench.numel() and not (torch.isfinite(wrench).all() and wrench.abs().max() <= MAX_WRENCH):
            raise ValueError(f"wrench components must be finite and within +-{MAX_WRENCH:g} (N, N m), got "
                             f"{wrench.abs().max().item():g}")
        for i in env_idx.tolist():
            if not view.is_dynamic(i):
                raise ValueError(f"a wrench needs a dynamic body; {view.name!r} in env {i} is static or kinematic")
        table = self._held.setdefault(view.name, (view, torch.zeros(self._sim.num_envs, 6)))[1]
        table[env_idx] = wrench

    def clear(self, env_idx: torch.Tensor | None = None) -> None:
        """Drop every wrench held in env_idx (all envs when None)."""
        for _, table in self._held.values():
            if env_idx is None:
                table.zero_()
            else:
                table[torch.as_tensor(env_idx, dtype=torch.int64).cpu()] = 0.0

    def snapshot(self) -> dict[str, torch.Tensor]:
        """{view name: float32 (N, 6)} copies of the held wrenches (save_state)."""
        return {name: table.clone() for name, (_, table) in self._held.items()}

    def restore(self, snapshot: dict[str, torch.Tensor]) -> None:
        """Hold exactly the wrenches of `snapshot` (views held since are cleared)."""
        for name, (_, table) in self._held.items():
            table.copy_(snapshot[name]) if name in snapshot else table.zero_()

    def apply(self) -> None:
        """Give PhysX every non-zero held wrench for the coming substep."""
        for view, table in self._held.values():
            for i in torch.nonzero(table.abs().sum(1)).flatten().tolist():
                body = view.entity_of(i).find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)
                w = table[i].numpy().astype(np.float32)
                body.add_force_torque(w[:3], w[3:])
