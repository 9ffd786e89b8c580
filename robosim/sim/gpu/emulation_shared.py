"""What the sub-scenes of one GPU system share, kept by the emulation's CPU systems
(robosim.sim.gpu.emulation).

On the GPU every sub-scene lives in one PxScene: one scene config, copied when the
system is constructed, and one world, where an infinite plane (the ground) touches the
bodies of every sub-scene, so robosim adds it once. The emulation gives each sub-scene
a CPU system of its own: it builds each with the config copied at construction, and
copies every plane into the others at the place the plane has in the GPU's world, so
the shared scene code (robosim.sim.gpu.scene) need not know.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sapien

SHARED_SUFFIX = " (plane shared by the emulation)"


def cpu_system(config: sapien.physx.PhysxSceneConfig) -> sapien.physx.PhysxCpuSystem:
    """A PhysxCpuSystem built with `config` (SAPIEN reads the process-wide one); the
    process-wide config is left as it was."""
    current = sapien.physx.get_scene_config()
    sapien.physx.set_scene_config(config)
    try:
        return sapien.physx.PhysxCpuSystem()
    finally:
        sapien.physx.set_scene_config(current)


def share_planes(entity: sapien.Entity, scenes: list, offset_of: Callable[[sapien.Scene], np.ndarray]) -> None:
    """Copy the plane shapes of `entity` (in `entity.scene`) into every other scene of
    `scenes`. offset_of(scene): float32 (3,) world offset of a sub-scene (m)."""
    planes = [[s for s in c.collision_shapes if isinstance(s, sapien.physx.PhysxCollisionShapePlane)]
              for c in entity.components if isinstance(c, sapien.physx.PhysxRigidStaticComponent)]
    planes = [shapes for shapes in planes if shapes]
    if not planes:
        return
    origin = offset_of(entity.scene)
    for scene in scenes:
        if scene is entity.scene:
            continue
        copy = sapien.Entity()
        copy.name = entity.name + SHARED_SUFFIX
        for shapes in planes:
            body = sapien.physx.PhysxRigidStaticComponent()
            for shape in shapes:
                twin = sapien.physx.PhysxCollisionShapePlane(shape.physical_material)
                twin.local_pose = shape.local_pose
                twin.set_collision_groups(shape.get_collision_groups())
                body.attach(twin)
            copy.add_component(body)
        shift = (origin - offset_of(scene)).astype(np.float64)
        copy.set_pose(sapien.Pose(entity.pose.p + shift, entity.pose.q))
        sapien.Scene.add_entity(scene, copy)     # past SubScene.add_entity: no watcher, nothing rendered
