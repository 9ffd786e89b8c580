"""Batched views over a GPU-style system's buffers (robosim.sim.gpu.scene).

Same contracts as robosim.sim.views (shapes, dtypes, env frame), with every tensor on
the system's device. Writes edit the torch view of a buffer and push all its rows, so
the buffer is fetched first when a step made it stale (GpuBuffers).
"""
from __future__ import annotations

import numpy as np
import torch

from robosim.sim.properties import GPU_REFUSED, GpuRefusesBodyProperties
from robosim.sim.views import POSE_DIM, VELOCITY_DIM, ActorView, ArticulationView, checked_poses


class GpuBuffers:
    """The system's buffers with lazy fetching: each kind is fetched at most once since
    the last `stale()` (one call per physics step)."""

    _FETCH = {
        "rigid": "gpu_fetch_rigid_dynamic_data",
        "link": "gpu_fetch_articulation_link_pose",
        "linkvel": "gpu_fetch_articulation_link_velocity",
        "qpos": "gpu_fetch_articulation_qpos",
        "qvel": "gpu_fetch_articulation_qvel",
    }

    def __init__(self, physx):
        self.physx = physx
        self.fresh: set[str] = set()
        self.fetch_calls = 0   # counted for the tests' fetch-once-per-step check

    def stale(self) -> None:
        self.fresh.clear()

    def use_current_stream(self) -> None:
        """SAPIEN launches its copies and kernels on its own CUDA stream (the default one
        unless told): point it at torch's current stream, so they are ordered with the
        torch work around them (`gpu_set_cuda_stream`)."""
        device = self.physx.device
        if device.type == "cuda":
            self.physx.gpu_set_cuda_stream(torch.cuda.current_stream(device).cuda_stream)

    def fetch(self, kind: str) -> None:
        if kind not in self.fresh:
            self.use_current_stream()
            getattr(self.physx, self._FETCH[kind])()
            self.fetch_calls += 1
            self.fresh.add(kind)

    def apply(self, name: str) -> None:
        """Push every row of a buffer: `gpu_apply_<name>()`, on torch's current stream."""
        self.use_current_stream()
        getattr(self.physx, f"gpu_apply_{name}")()

    def rigid(self) -> torch.Tensor:
        """float32 (rows, 13) view of cuda_rigid_body_data with the dynamic bodies' rows current."""
        self.fetch("rigid")
        return self.physx.cuda_rigid_body_data.torch()

    def links(self) -> torch.Tensor:
        """The same buffer with the articulation links' pose columns current."""
        self.fetch("link")
        return self.physx.cuda_rigid_body_data.torch()

    def link_velocities(self) -> torch.Tensor:
        self.fetch("link")
        self.fetch("linkvel")
        return self.physx.cuda_rigid_body_data.torch()

    def joints(self, kind: str) -> torch.Tensor:
        """float32 (A, dof_max) cuda_articulation_<kind>, current."""
        self.fetch(kind)
        return getattr(self.physx, f"cuda_articulation_{kind}").torch()


def _rows(env_idx: torch.Tensor | None, index: torch.Tensor) -> torch.Tensor:
    return index if env_idx is None else index[env_idx.to(index.device)]


class GpuActorView(GpuRefusesBodyProperties, ActorView):
    """ActorView over `cuda_rigid_body_data` rows (env frame = sub-scene frame)."""

    def bind(self, buffers: GpuBuffers, device: torch.device) -> None:
        self.buffers, self.device = buffers, device
        # static bodies have no row in the GPU buffers and never move: their build pose
        self.static = any(b is None for b in self.bodies)
        self._static_pose = torch.tensor([[*e.pose.p, *e.pose.q] for e in self.entities], device=device,
                                         dtype=torch.float32) if self.static else None
        self.index = None if self.static else torch.tensor([buffers.physx.pose_index(b) for b in self.bodies],
                                                           device=device, dtype=torch.long)

    def pose(self) -> torch.Tensor:
        if self._static_pose is not None:    # set exactly when static
            return self._static_pose.clone()
        return self.buffers.rigid()[self.index, :POSE_DIM]

    def set_state(self, state, env_idx=None):
        if not self.static:        # a static body's state is its build pose: nothing to write
            super().set_state(state, env_idx)

    def _write(self, cols: slice, value: torch.Tensor, env_idx) -> None:
        if self.index is None:    # None exactly when static
            raise ValueError(f"actor {self.name!r} is static: a static body cannot move on a GPU backend "
                             "(build it kinematic)")
        data = self.buffers.rigid()     # current rows: the apply below pushes all of them
        data[_rows(env_idx, self.index), cols] = value.to(self.device, torch.float32)
        self.buffers.apply("rigid_dynamic_data")
        self._wrote()

    def set_pose(self, pose, env_idx=None):
        rows = len(self.entities) if env_idx is None else len(env_idx)
        self._write(slice(0, POSE_DIM), torch.from_numpy(checked_poses("pose", pose, rows)), env_idx)

    def _state_parts(self) -> list[torch.Tensor]:
        return [self.pose()] if self.kinematic else [self.pose(), self.velocity()]

    def velocity(self) -> torch.Tensor:
        if self.kinematic:
            return torch.zeros(len(self.entities), VELOCITY_DIM, device=self.device)
        return self.buffers.rigid()[self.index, POSE_DIM:POSE_DIM + VELOCITY_DIM]

    def set_velocity(self, velocity, env_idx=None):
        if not self.kinematic:
            self._write(slice(POSE_DIM, POSE_DIM + VELOCITY_DIM), velocity, env_idx)


class GpuArticulationView(ArticulationView):
    """ArticulationView over the `cuda_articulation_*` buffers and the link rows."""

    def bind(self, buffers: GpuBuffers, device: torch.device) -> None:
        self.buffers, self.device = buffers, device
        px = buffers.physx
        self.index = torch.tensor([px.articulation_index(a) for a in self.articulations], device=device,
                                  dtype=torch.long)
        # link rows per env: links[k] of env i sits at link_index[i, k]
        self.link_index = torch.tensor([[px.pose_index(link) for link in links[:len(self.link_names)]]
                                        for links in self.links], device=device, dtype=torch.long)
        # the drive targets as a tensor on `device` (the CPU view keeps a numpy array)
        self._gpu_targets = px.cuda_articulation_target_qpos.torch()[self.index, :self.dof].clone()
        self.joint_mask = self.joint_mask.to(device)

    refused_properties = ("stiffness", "damping", "joint_friction")

    def set_drive_gains(self, i: int, gains) -> None:
        raise ValueError(GPU_REFUSED.format(what="the drive gains", name=self.name))

    def set_joint_frictions(self, i: int, frictions) -> None:
        raise ValueError(GPU_REFUSED.format(what="the joint friction", name=self.name))

    def qpos(self, copy: bool = True):
        return self.buffers.joints("qpos")[self.index, :self.dof]     # a gather: a new tensor either way

    def qvel(self, copy: bool = True):
        return self.buffers.joints("qvel")[self.index, :self.dof]

    def drive_targets(self):
        return self._gpu_targets.clone()

    def _write_joints(self, kind: str, values: torch.Tensor, env_idx) -> None:
        """Edit rows of cuda_articulation_<kind> and push the WHOLE buffer: SAPIEN's
        indexed joint applies write the first n articulations, not the named ones."""
        buffer = self.buffers.joints(kind)    # current rows: the apply pushes all of them
        buffer[_rows(env_idx, self.index), :self.dof] = values.to(self.device, torch.float32)
        self.buffers.apply(f"articulation_{kind}")
        self._wrote()

    def set_qpos(self, qpos, env_idx=None):
        self._write_joints("qpos", qpos, env_idx)
        self._update_kinematics()

    def set_qvel(self, qvel, env_idx=None):
        self._write_joints("qvel", qvel, env_idx)

    def _update_kinematics(self) -> None:
        self.buffers.physx.gpu_update_articulation_kinematics()
        self.buffers.fresh.discard("link")

    def set_drive_targets(self, targets, env_idx=None):
        """PD targets (M, dof) (a tensor or numpy array, as for the CPU view); the target
        buffer is written by robosim alone, so its other rows are always current and need
        no fetch."""
        if isinstance(targets, np.ndarray):   # the CPU controllers' numpy output (emulated system on CPU)
            targets = torch.from_numpy(targets)
        targets = targets.to(self.device, torch.float32)
        if env_idx is None:
            self._gpu_targets.copy_(targets)
        else:
            self._gpu_targets[env_idx.to(self.device)] = targets
        px = self.buffers.physx
        px.cuda_articulation_target_qpos.torch()[_rows(env_idx, self.index), :self.dof] = targets
        self.buffers.apply("articulation_target_position")   # every row: see _write_joints
        self._wrote()

    def _state_parts(self) -> list[torch.Tensor]:
        return [self.root_pose(), self.qpos(), self.qvel(), self.drive_targets()]

    def root_pose(self) -> torch.Tensor:
        """float32 (N, 7) root link pose, env frame."""
        return self.buffers.links()[self.link_index[:, 0], :POSE_DIM]

    def set_root_pose(self, pose, env_idx=None):
        """Through the root link's rows and gpu_apply_articulation_root_pose (SAPIEN
        ignores entity and root-pose setters on a GPU articulation)."""
        rows = len(self.articulations) if env_idx is None else len(env_idx)
        pose = torch.from_numpy(checked_poses("pose", pose, rows)).to(self.device)
        data = self.buffers.links()
        data[_rows(env_idx, self.link_index[:, 0]), :POSE_DIM] = pose
        self.buffers.apply("articulation_root_pose")
        self._update_kinematics()
        self._wrote()

    def link_pose(self, link_name: str) -> torch.Tensor:
        """float32 (N, 7) pose of one link in the env frame, as PhysX computed it."""
        k = self.link_names.index(link_name)
        return self.buffers.links()[self.link_index[:, k], :POSE_DIM]

    def link_velocity(self) -> torch.Tensor:
        """float32 (N, L, 6) link velocities (robosim.sim.views.ArticulationView)."""
        return self.buffers.link_velocities()[self.link_index, POSE_DIM:POSE_DIM + VELOCITY_DIM]
