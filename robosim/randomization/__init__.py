"""Domain randomization: per-env random streams, declared events, registered terms."""
from robosim.randomization.rng import BatchRandom, EnvRandomStreams, StreamsSnapshot
from robosim.randomization.terms import combine, register_term

__all__ = ["BatchRandom", "EnvRandomStreams", "StreamsSnapshot", "combine", "register_term"]
