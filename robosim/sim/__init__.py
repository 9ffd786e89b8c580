"""Scene manager over SAPIEN: N envs in one physics system, batched torch views."""
from robosim.sim.backends import SIM_BACKENDS, backend_device, create_sim_scene, resolve_backend
from robosim.sim.objects import (
    ArticulationModel,
    Box,
    Capsule,
    Cylinder,
    Joint,
    Link,
    Material,
    Mesh,
    RigidObject,
    Sphere,
)
from robosim.sim.physics import PhysicsConfig
from robosim.sim.scene import SimScene
from robosim.sim.views import ActorView, ArticulationView

__all__ = ["ArticulationModel", "Box", "Capsule", "Cylinder", "Joint", "Link", "Material", "Mesh", "RigidObject",
           "Sphere", "PhysicsConfig", "SIM_BACKENDS", "SimScene", "backend_device", "create_sim_scene",
           "resolve_backend", "ActorView", "ArticulationView"]
