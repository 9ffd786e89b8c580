"""Rollouts for learning, above robosim.vector: preallocated (T, N, ...) buffers filled by
a collector in any autoreset mode, GAE, a replay buffer with hindsight relabeling, and
policy checkpoints that `robosim eval` can run.

RolloutCollector   steps a torch vector env with any callable policy (Transition, Rollout)
compute_gae        advantages/returns with explicit terminated/truncated boundaries
ReplayBuffer       off-policy storage, HER "future" relabeling via compute_reward
save_policy, load_policy   torch.export policy checkpoints with their layout
flatten_obs        robosim.core.tree's: an obs tree -> float32 (N, D), what policies take
RunLog             CSV, JSON and PNG learning curves of a training run
"""
from robosim.core.tree import flatten_obs
from robosim.rollout.checkpoint import load_policy, save_policy
from robosim.rollout.collector import Rollout, RolloutCollector, Transition
from robosim.rollout.gae import compute_gae
from robosim.rollout.replay_buffer import ReplayBuffer
from robosim.rollout.run_log import RunLog

__all__ = ["ReplayBuffer", "Rollout", "RunLog", "RolloutCollector", "Transition", "compute_gae", "flatten_obs",
           "load_policy", "save_policy"]
