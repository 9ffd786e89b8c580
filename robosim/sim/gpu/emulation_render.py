"""The batched render system of the emulated GPU backend (robosim.sim.gpu.emulation).

SAPIEN's RenderSystemGroup renders all sub-scenes' copies of a camera in one call and,
once it exists, changes only what has a row in its pose buffer (SAPIEN 3.0.2,
src/sapien_renderer/batched_render_system.cpp and .cu; docs/gpu.md lists each rule):

  * at its creation every render system steps once (`init` 175-186): every transform is
    taken then;
  * `update` (303-338) moves the render shapes and the cameras whose
    `set_gpu_pose_batch_index` named a row: world = row pose * the local pose they had
    when the group (shapes, `init` 204-224) or their camera group (cameras,
    `createCameraBatch` 280-287) was made; nothing else moves: a fixed camera, a light,
    a shape without a row keep their pose from the group's creation;
  * a camera group turns its cameras' auto-upload off after one render
    (camera_component.cpp gpuInit 469-487): their intrinsics and the scene's lights are
    what they were then;
  * materials do change: svulkan2 uploads a base colour when it is set (an H100 run of
    SAPIEN's RenderSystemGroup showed it, tests/gpu/test_batched_render_rules.py).

The emulation renders each sub-scene's own render world with SAPIEN's per-scene camera,
setting what SAPIEN would show (local poses, intrinsics, light colours) for the update
or the picture, and restoring the user's values afterwards, so the
getters keep reporting what was set, as SAPIEN's do. It also keeps SAPIEN's checks: no
render before the pose source is set, no scene changed after the group exists, and (an
emulation check) no render from pose rows that were not fetched since the last step.
Pictures come as torch tensors on the system's device (`get_picture_cuda(name).torch()`,
(N, H, W, C), float32, or int32 for Segmentation, as SAPIEN's CUDA pictures).
"""
from __future__ import annotations

import contextlib

import numpy as np
import sapien
import torch

SCENE_CHANGED = "Modifying a scene (add/remove object/camera) is not allowed after creating the batched render system."
_LIGHT = sapien.render.RenderLightComponent
_CAMERA = sapien.render.RenderCameraComponent


def _version(scene: sapien.Scene) -> tuple:
    return tuple(sorted((e.per_scene_id, len(e.components)) for e in scene.entities))


def _of(scene: sapien.Scene, kind) -> list:
    return [c for e in scene.entities for c in e.components if isinstance(c, kind)]


def _intrinsics(camera) -> tuple:
    """(near, far, fx, fy, cx, cy, skew): set_perspective_parameters' arguments."""
    k = camera.get_intrinsic_matrix()
    return (camera.near, camera.far, float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2]), camera.skew)


def _row_pose(poses: np.ndarray, row: int) -> sapien.Pose:
    return sapien.Pose(poses[row, :3], poses[row, 3:7])


class _Restorer:
    """Sets values for the length of a render and puts the user's back afterwards."""

    def __init__(self):
        self._undo: list = []

    def set(self, getter, setter, value) -> None:
        self._undo.append((setter, getter()))
        setter(value)

    def restore(self) -> None:
        for setter, value in reversed(self._undo):
            setter(value)
        self._undo.clear()


class EmulatedCudaArray:
    """The part of SAPIEN's CudaArray robosim uses: `.torch()` gives the tensor itself
    (a buffer, or a group's pictures (N, H, W, C) on the device)."""

    def __init__(self, tensor: torch.Tensor):
        self._tensor = tensor

    def torch(self) -> torch.Tensor:
        return self._tensor


class EmulatedCameraGroup:
    """One camera per sub-scene, captured together (SAPIEN's RenderCameraGroup)."""

    def __init__(self, cameras: list, picture_names: list[str], group: EmulatedRenderGroup):
        if not cameras:
            raise RuntimeError("failed to create BatchedCamera: empty cameras")
        size = (cameras[0].width, cameras[0].height)
        for camera in cameras:
            if camera.entity is None or camera.entity.scene is None:
                raise RuntimeError("failed to create BatchedCamera: some camera is not added to scene")
            if (camera.width, camera.height) != size:
                raise RuntimeError("failed to create BatchedCamera: the cameras must have the same width and height")
        self.cameras, self.picture_names, self.device = list(cameras), list(picture_names), group.system.device
        # gpuInit renders once with auto-upload, then turns it off: projection and lights stay
        self._intrinsics = [_intrinsics(c) for c in self.cameras]
        self._lights = [[(light, list(light.color)) for light in _of(c.entity.scene, _LIGHT)] for c in self.cameras]
        group.camera_batch_created(self.cameras)
        self._pictures: dict[str, torch.Tensor] = {}

    def take_picture(self) -> None:
        frames: dict[str, list[np.ndarray]] = {name: [] for name in self.picture_names}
        for k, camera in enumerate(self.cameras):
            restorer = _Restorer()
            try:
                restorer.set(lambda c=camera: _intrinsics(c),
                             lambda v, c=camera: c.set_perspective_parameters(*v), self._intrinsics[k])
                for light, color in self._lights[k]:
                    restorer.set(lambda li=light: list(li.color), lambda v, li=light: setattr(li, "color", v), color)
                camera.take_picture()
                for name in self.picture_names:    # read before restoring: the render uses these values
                    frames[name].append(camera.get_picture(name))
            finally:
                restorer.restore()
        for name, pictures in frames.items():
            stacked = np.stack(pictures)
            if stacked.dtype == np.uint32:
                stacked = stacked.astype(np.int32)
            self._pictures[name] = torch.from_numpy(stacked).to(self.device)

    def get_picture_cuda(self, name: str) -> EmulatedCudaArray:
        if name not in self.picture_names:
            raise RuntimeError(f"failed to get picture: {name!r} is not among this group's {self.picture_names}")
        if name not in self._pictures:
            raise RuntimeError("failed to get picture: take_picture was not called (physx_gpu_emulated check)")
        return EmulatedCudaArray(self._pictures[name])


class EmulatedRenderGroup:
    """SAPIEN's RenderSystemGroup over the emulated system's sub-scenes (module docstring).

    `system.batch_rows` maps id(render shape or camera) -> (the object, its pose row): what
    robosim gave `set_gpu_pose_batch_index` through the system."""

    def __init__(self, sub_scenes: list, system):
        self.sub_scenes = list(sub_scenes)
        self.system = system
        for scene in self.sub_scenes:        # init: every render system steps once
            scene.update_render()
        self._versions = [_version(s) for s in self.sub_scenes]
        self._poses = None
        self._entities = [self._classify(scene) for scene in self.sub_scenes]
        self._cameras = {id(c): (c, None, c.entity.pose * c.local_pose)
                         for scene in self.sub_scenes for c in _of(scene, _CAMERA)}
        self._lights = [[(light, light.entity.pose * light.local_pose) for light in _of(scene, _LIGHT)]
                        for scene in self.sub_scenes]

    def _classify(self, scene: sapien.Scene) -> list:
        """[(entity, pose now, moving)] of the scene's rendered entities that have no pose
        row: SAPIEN keeps them where they are now. Shapes with a row must sit on their own
        body's row: the emulation draws them where CPU PhysX has that body."""
        rows, out = self.system.batch_rows, []
        for entity in scene.entities:
            render = entity.find_component_by_type(sapien.render.RenderBodyComponent)
            if render is None:
                continue
            body = entity.find_component_by_type(sapien.physx.PhysxRigidBodyComponent)
            moving = body is not None and not isinstance(body, sapien.physx.PhysxRigidStaticComponent)
            given = {rows[id(s)][1] if id(s) in rows else None for s in render.render_shapes}
            if given == {None}:
                out.append((entity, entity.pose, moving))
            elif not moving or given != {self.system.pose_index(body)}:
                raise RuntimeError(f"entity {entity.name!r}: its render shapes' pose rows {sorted(given, key=str)} "
                                   f"are not all its body's row (physx_gpu_emulated check)")
        return out

    def camera_batch_created(self, cameras: list) -> None:
        """A camera group was made: its cameras with a row keep their local pose from now."""
        for camera in cameras:
            if id(camera) in self.system.batch_rows:
                self._cameras[id(camera)] = (camera, self.system.batch_rows[id(camera)][1], camera.local_pose)

    def set_cuda_poses(self, pose_buffer) -> None:
        """pose_buffer: `.torch()` float32 (rows, 13), [p, q wxyz, v, w] per row."""
        self._poses = pose_buffer

    def set_cuda_stream(self, stream: int) -> None:
        """Kept, not used: the emulation's copies are torch's, on torch's current stream."""

    def create_camera_group(self, cameras: list, picture_names: list[str]) -> EmulatedCameraGroup:
        return EmulatedCameraGroup(cameras, picture_names, self)

    def update_render(self) -> None:
        if self._poses is None:
            raise RuntimeError("the data source for pose has not been set.")
        if any(_version(s) != v for s, v in zip(self.sub_scenes, self._versions)):
            raise RuntimeError(SCENE_CHANGED)
        if self.system.unfetched_pose_rows():
            raise RuntimeError("update_render reads pose rows of cuda_rigid_body_data that were not fetched since "
                               "the last step: fetch rigid dynamic data and link poses first "
                               "(physx_gpu_emulated check)")
        poses = self._poses.torch()[:, :7].detach().cpu().numpy().astype(np.float64)
        for k, scene in enumerate(self.sub_scenes):
            with self._posed(k, scene, poses):
                scene.update_render()

    @contextlib.contextmanager
    def _posed(self, k: int, scene: sapien.Scene, poses: np.ndarray):
        """Scene k's entities, cameras and lights placed where SAPIEN's batched renderer
        draws them: a row's pose, or the pose they had when the group was made."""
        restorer = _Restorer()
        try:
            for entity, pose, moving in self._entities[k]:
                now = entity.pose
                if (now.p == pose.p).all() and (now.q == pose.q).all():   # sapien.Pose's == is identity
                    continue
                if moving:     # PhysX moves it and SAPIEN would not draw that: say so, do not hide it
                    raise RuntimeError(f"entity {entity.name!r} moved, but its render shapes have no pose row: "
                                       f"SAPIEN's batched renderer would draw it where it was (physx_gpu_emulated "
                                       f"check)")
                restorer.set(lambda e=entity: e.pose, entity.set_pose, pose)
            for camera in _of(scene, _CAMERA):
                _, row, pose = self._cameras[id(camera)]
                world = pose if row is None else _row_pose(poses, row) * pose
                restorer.set(lambda c=camera: c.local_pose, camera.set_local_pose, camera.entity.pose.inv() * world)
            for light, pose in self._lights[k]:
                restorer.set(lambda li=light: li.local_pose, light.set_local_pose, light.entity.pose.inv() * pose)
            yield
        finally:
            restorer.restore()


class EmulatedRendering:
    """The rendering part of robosim.sim.gpu.emulation.EmulatedGpuSystem (its buffer
    `rigid` and pose rows `_pose_rows` come from there)."""

    batch_rows: dict
    rigid: torch.Tensor
    _pose_rows: torch.Tensor

    def set_pose_batch_index(self, obj, row: int) -> None:
        """SAPIEN's `set_gpu_pose_batch_index` on a render shape or camera, remembered:
        the emulated render group moves only what has a row."""
        obj.set_gpu_pose_batch_index(row)
        self.batch_rows[id(obj)] = (obj, row)     # the object is held, so its id stays its own

    def render_group(self, sub_scenes: list, poses: torch.Tensor) -> EmulatedRenderGroup:
        """The render group, reading poses from `poses` (float32 (rows, 13), rows of
        cuda_rigid_body_data first)."""
        group = EmulatedRenderGroup(sub_scenes, self)
        group.set_cuda_poses(EmulatedCudaArray(poses))
        return group

    def unfetched_pose_rows(self) -> bool:
        """True when a body or link pose row was not fetched since the last step."""
        return not bool(torch.isfinite(self.rigid[self._pose_rows, :7]).all())
