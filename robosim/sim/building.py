"""Scene building for task authors: turn the descriptions of `robosim.sim.objects` into one
SAPIEN object per env and return the batched view. Mixed into SimScene.

    cube = sim.add_object("cube", RigidObject([Box(0.02)], pose=(0, 0, 0.02)))
    tees = sim.add_object("tee", lambda i: RigidObject(tee_shapes(rng_sizes[i])))
    drawer = sim.add_articulation("cabinet", cabinet_model)
    robot_like = sim.load_urdf("arm", "/path/arm.urdf", pose=(0, 0, 0))

A description (or a function env_index -> description, for per-env assets) is given in
the env frame; `env_pose` adds the env's place in the shared physics world.
"""
from __future__ import annotations

import math
import os
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import sapien

from robosim.sim.meshes import prepare_mesh
from robosim.sim.objects import (
    IDENTITY,
    ArticulationModel,
    Box,
    Joint,
    Material,
    Mesh,
    RigidObject,
    Sphere,
    check_pose,
)
from robosim.sim.pool import ObjectPoolView
from robosim.sim.views import ActorView, ArticulationView

ObjectSource = RigidObject | Callable[[int], RigidObject]
ModelSource = ArticulationModel | Callable[[int], ArticulationModel]
# build-time modifier of an object description: f(env_index, RigidObject) -> RigidObject
ObjectModifier = Callable[[int, Any], Any]


def _sapien_pose(pose: Sequence[float]) -> sapien.Pose:
    return sapien.Pose(np.asarray(pose[:3], dtype=np.float32), np.asarray(pose[3:], dtype=np.float32))


def _x_to_axis(axis: Sequence[float]) -> sapien.Pose:
    """Rotation taking +x onto unit `axis` (SAPIEN joints move along their frame's x)."""
    x = np.array([1.0, 0.0, 0.0])
    a = np.asarray(axis, dtype=np.float64)
    c = float(np.dot(x, a))
    if c < -1 + 1e-9:
        return sapien.Pose(q=[0.0, 0.0, 0.0, 1.0])   # 180 deg about z
    v = np.cross(x, a)
    q = np.array([1.0 + c, *v])
    return sapien.Pose(q=(q / np.linalg.norm(q)).astype(np.float32))


def _render_material(color) -> sapien.render.RenderMaterial:
    return sapien.render.RenderMaterial(base_color=list(color))


def add_shapes(builder, shapes, density: float, material: sapien.physx.PhysxMaterial, visuals: bool = True) -> int:
    """Add each shape's collision (and, with `visuals`, its visual) to a SAPIEN actor or
    link builder; returns the number of collision shapes added. A scene that never
    renders passes visuals=False: no render material or render body is made at all
    (each material costs milliseconds once a scene exists)."""
    collisions = 0
    for s in shapes:
        pose = _sapien_pose(s.pose)
        if isinstance(s, Mesh):
            mesh = prepare_mesh(s.source, s.collision, "Mesh.source")
            if visuals:
                visual_material = None if s.color is None else _render_material(s.color)
                builder.add_visual_from_file(mesh.visual_file, pose=pose, scale=s.scale, material=visual_material)
            for part in mesh.collision_files:
                builder.add_convex_collision_from_file(part, pose=pose, scale=s.scale, material=material,
                                                       density=density)
                collisions += 1
            continue
        kind = type(s).__name__.lower()       # box, sphere, capsule, cylinder
        size = {"half_size": s.half_size} if isinstance(s, Box) else \
            {"radius": s.radius} if isinstance(s, Sphere) else {"radius": s.radius, "half_length": s.half_length}
        if visuals:
            getattr(builder, f"add_{kind}_visual")(pose, material=_render_material(s.color), **size)
        if s.collision:
            getattr(builder, f"add_{kind}_collision")(pose, material=material, density=density, **size)
        collisions += int(s.collision)
    return collisions


def apply_joint(joint: sapien.physx.PhysxArticulationJoint, j: Joint) -> None:
    """Write every field of `j` to a built PhysX joint. SAPIEN 3.0's builder applies only
    limits and damping (joint friction is recorded and dropped, leaving PhysX's 0.05)."""
    joint.set_friction(j.friction)
    if j.type == "fixed":
        return
    joint.set_limits(np.array([j.limits], dtype=np.float32))
    joint.set_armature(np.array([j.armature], dtype=np.float32))
    joint.set_drive_properties(j.stiffness, j.damping, j.force_limit, "force")
    joint.set_drive_target(j.target)


def _physx_material(m: Material) -> sapien.physx.PhysxMaterial:
    return sapien.physx.PhysxMaterial(m.static_friction, m.dynamic_friction, m.restitution)


def check_object_modifiers(modifiers: Mapping[str, Sequence[ObjectModifier]] | None
                           ) -> Mapping[str, tuple[ObjectModifier, ...]]:
    """A read-only copy of {object name: [f(env_index, RigidObject) -> RigidObject]}
    (None: empty); TypeError for anything else."""
    modifiers = {} if modifiers is None else modifiers
    if not isinstance(modifiers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, (list, tuple)) and all(callable(f) for f in v)
            for k, v in modifiers.items()):
        raise TypeError(f"object_modifiers must map object names to lists of functions "
                        f"(env_index, RigidObject) -> RigidObject, got {modifiers!r:.120}")
    return types.MappingProxyType({k: tuple(v) for k, v in modifiers.items()})


class SceneBuilding:
    """Mixin of SimScene: env-frame building of rigid objects and articulations.

    Needs `sub_scenes`, `num_envs`, `origins` (float64 (N, 3)) and the view registries
    `actors` / `articulations`, plus `_register_actor_view` / `_register_articulation_view`."""

    # {object name: [f(env_index, RigidObject) -> RigidObject]}: applied, in order, to the
    # descriptions add_object / add_object_pool build under that name (randomization
    # events of mode "reconfigure"); set by create_sim_scene's object_modifiers argument
    object_modifiers: Mapping[str, Sequence[ObjectModifier]] = types.MappingProxyType({})

    def use_object_modifiers(self, modifiers: Mapping[str, Sequence[ObjectModifier]] | None) -> None:
        """Set `object_modifiers` (before anything is built); None: none."""
        self.object_modifiers = check_object_modifiers(modifiers)

    def env_pose(self, env_index: int, pose: Sequence[float] = IDENTITY) -> sapien.Pose:
        """World pose of an env-frame `pose` in env `env_index` (the GPU backend, where
        SAPIEN applies sub-scene offsets itself, returns it unchanged)."""
        pose = check_pose("pose", pose)
        p = np.asarray(pose[:3], dtype=np.float32) + self._origins32[env_index]
        return sapien.Pose(p, np.asarray(pose[3:], dtype=np.float32))

    def _per_env(self, source, kind: type, argument: str = "source") -> list:
        if isinstance(source, kind):
            return [source] * self.num_envs
        if not callable(source):
            raise TypeError(f"{argument} must be a {kind.__name__} or a function env_index -> {kind.__name__}, "
                            f"got {type(source).__name__}")
        items = [source(i) for i in range(self.num_envs)]
        for i, item in enumerate(items):
            if not isinstance(item, kind):
                raise TypeError(f"{argument}({i}) must return a {kind.__name__}, got {type(item).__name__}")
        return items

    def add_object(self, name: str, source: ObjectSource) -> ActorView:
        """Build one rigid object per env from `source` (a RigidObject, or a function
        env_index -> RigidObject for per-env assets); returns its batched view."""
        self._check_new_name(name, self.actors)
        objects = self._modified(name, self._per_env(source, RigidObject))
        return self._register_actor_view(name, [self._build_rigid(name, obj, s, i)
                                                for i, (obj, s) in enumerate(zip(objects, self.sub_scenes))])

    def _modified(self, name: str, objects: list) -> list:
        """Apply build-time modifiers (randomization events at reconfigure) to env i's description."""
        for modify in self.object_modifiers.get(name, ()):
            objects = [modify(i, obj) for i, obj in enumerate(objects)]
        return objects

    pool_view_class = ObjectPoolView

    def add_object_pool(self, name: str, source: Callable[[int, int], RigidObject], size: int) -> ObjectPoolView:
        """K = `size` variants per env, `source(env_index, k)` -> RigidObject; variant 0 is in
        play first (robosim.sim.pool). Swap with `view.activate(variant, env_idx)`."""
        self._check_new_name(name, self.actors)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an int >= 1 (variants per env), got {size!r}")
        if not callable(source):
            raise TypeError(f"source must be a function (env_index, k) -> RigidObject, got {type(source).__name__}")
        variants = []
        for i, scene in enumerate(self.sub_scenes):
            objects = [source(i, k) for k in range(size)]
            for k, obj in enumerate(objects):
                if not isinstance(obj, RigidObject) or obj.body != "dynamic":
                    raise TypeError(f"source({i}, {k}) must return a dynamic RigidObject, got {obj!r:.80}")
            for modify in self.object_modifiers.get(name, ()):
                objects = [modify(i, obj) for obj in objects]
            variants.append([self._build_rigid(name, self.pool_view_class.build_description(obj, k), scene, i)
                             for k, obj in enumerate(objects)])
        self._check_in_cell(name, [v[0].pose.p for v in variants])
        view = self.pool_view_class(name, variants, self._origins32, cache=self.read_cache)
        self._attach_packed(view)
        self.actors[name] = view
        return view

    def _build_rigid(self, name: str, obj: RigidObject, scene: sapien.Scene, env_index: int) -> sapien.Entity:
        builder = scene.create_actor_builder()
        if add_shapes(builder, obj.shapes, obj.density, _physx_material(obj.material), self.render) == 0 \
                and obj.body == "dynamic":
            raise ValueError(f"object {name!r} in env {env_index} is dynamic but has no collision shape "
                             "(a dynamic body needs one to have mass)")
        builder.initial_pose = self.env_pose(env_index, obj.pose)
        if obj.body == "static":
            return builder.build_static(name=name)
        if obj.body == "kinematic":
            return builder.build_kinematic(name=name)
        entity = builder.build(name=name)
        if obj.mass is not None:
            body = entity.find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)
            ratio = obj.mass / body.mass
            body.mass = obj.mass
            body.inertia = np.asarray(body.inertia) * ratio
        return entity

    def add_articulation(self, name: str, source: ModelSource) -> ArticulationView:
        """Build one articulation per env from an ArticulationModel (or a function
        env_index -> model: per-env models may differ in joint count; the view pads)."""
        self._check_new_name(name, self.articulations)
        models = self._per_env(source, ArticulationModel)

        def build(scene: sapien.Scene, env_index: int) -> sapien.physx.PhysxArticulation:
            model = models[env_index]
            builder = scene.create_articulation_builder()
            material = _physx_material(model.material)
            link_builders = {}
            for link in model.links:
                lb = builder.create_link_builder(link_builders.get(link.parent))
                lb.set_name(link.name)
                add_shapes(lb, link.shapes, link.density, material, self.render)
                if link.joint is not None:
                    j = link.joint
                    to_axis = _x_to_axis(j.axis)
                    lb.set_joint_name(f"{link.name}_joint")
                    limits = [] if j.type == "fixed" else [list(j.limits)]
                    lb.set_joint_properties(j.type, limits, _sapien_pose(j.pose_in_parent) * to_axis, to_axis,
                                            friction=j.friction, damping=j.damping)
                link_builders[link.name] = lb
            builder.initial_pose = self.env_pose(env_index, model.pose)
            art = builder.build(fix_root_link=model.fix_root)
            art.set_name(f"{name}_{env_index}")
            joints = {j.name: j for j in art.get_joints()}
            for link in model.links[1:]:
                apply_joint(joints[f"{link.name}_joint"], link.joint)
            return art

        return self._register_articulation_view(name, [build(s, i) for i, s in enumerate(self.sub_scenes)], True)

    def load_urdf(self, name: str, path: str | os.PathLike, pose: Sequence[float] = IDENTITY,
                  fix_root: bool = True, scale: float = 1.0) -> ArticulationView:
        """Load the URDF at `path` once per env, its root at env-frame `pose`."""
        self._check_new_name(name, self.articulations)
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ValueError(f"path must be an existing URDF file, got {path!r} (no such file)")
        if not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
            raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
        pose = check_pose("pose", pose)

        def load(scene: sapien.Scene, env_index: int) -> sapien.physx.PhysxArticulation:
            loader = scene.create_urdf_loader()
            loader.fix_root_link = fix_root
            loader.scale = scale
            try:
                builders = loader.parse(path)[0]
            except Exception as err:
                raise ValueError(f"path must be a URDF that parses, got {path!r} ({err})") from None
            if len(builders) != 1:
                raise ValueError(f"path must be a URDF with exactly one articulation, got {len(builders)} in {path!r}")
            builder = builders[0]
            if not self.render:      # no render body in a scene that never renders
                for link_builder in builder.link_builders:
                    link_builder.visual_records = []
            builder.initial_pose = self.env_pose(env_index, pose)
            art = builder.build(fix_root_link=fix_root)
            art.set_name(f"{name}_{env_index}")
            # the URDF's <dynamics friction>: recorded by SAPIEN's builder, never applied
            friction = {lb.joint_record.name: lb.joint_record.friction for lb in builder.link_builders
                        if lb.joint_record.friction is not None}   # None: no <dynamics friction>, PhysX's default stays
            for joint in art.get_joints():
                if joint.name in friction:
                    joint.set_friction(friction[joint.name])
            return art

        return self._register_articulation_view(name, [load(s, i) for i, s in enumerate(self.sub_scenes)], True)
