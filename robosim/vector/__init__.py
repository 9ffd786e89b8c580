"""Vector API over robosim's batched envs and over lists of ordinary gymnasium envs.

    venv = robosim.make_vec("PickCube-v1", num_envs=16,
                            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)

BatchedVectorEnv    gymnasium VectorEnv with the three autoreset modes (torch)
ListVecEnv, SingleVecEnv, ListBatchedEnv   adapters for single gymnasium envs
UnbatchedEnv        a num_envs=1 robosim env as an ordinary gymnasium.Env
NormalizeVecEnv, EpisodeStatistics, TorchToNumpy   wrappers (all three modes)
EpisodeTracker      the one per-env episode bookkeeping (return, length, success seen)
                    behind BatchedVectorEnv, the wrappers and robosim.rollout
The Stable-Baselines3 adapter lives in robosim.vector.sb3 (needs stable-baselines3).
"""
from robosim.vector.autoreset import BatchedVectorEnv, to_autoreset_mode
from robosim.vector.episode_stats import EpisodeStatistics
from robosim.vector.episode_tracker import EpisodeStep, EpisodeTracker
from robosim.vector.list_env import ListBatchedEnv, ListVecEnv, SingleVecEnv
from robosim.vector.make import make_list_vec, make_vec
from robosim.vector.normalize import NormalizeVecEnv, RunningMeanStd
from robosim.vector.numpy_wrapper import TorchToNumpy
from robosim.vector.unbatched import UnbatchedEnv

__all__ = [
    "BatchedVectorEnv", "EpisodeStatistics", "EpisodeStep", "EpisodeTracker", "ListBatchedEnv", "ListVecEnv",
    "NormalizeVecEnv", "RunningMeanStd", "SingleVecEnv", "TorchToNumpy", "UnbatchedEnv", "make_list_vec", "make_vec",
    "to_autoreset_mode",
]
