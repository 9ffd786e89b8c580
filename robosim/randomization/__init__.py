"""Domain randomization: per-env random streams."""
from robosim.randomization.rng import BatchRandom, EnvRandomStreams

__all__ = ["BatchRandom", "EnvRandomStreams"]
