"""Scene manager over SAPIEN: N envs in one physics system, batched torch views."""
from robosim.sim.physics import PhysicsConfig
from robosim.sim.scene import SIM_BACKENDS, SimScene, create_sim_scene, resolve_backend
from robosim.sim.views import ActorView, ArticulationView

__all__ = ["PhysicsConfig", "SIM_BACKENDS", "SimScene", "create_sim_scene", "resolve_backend", "ActorView", "ArticulationView"]
