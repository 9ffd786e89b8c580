"""physics_isolation="separate": every env is bit-for-bit a 1-env run seeded seed + i,
whatever happens to the other envs of the batch (docs/design.md, Public contract; docs/reliability.md)."""
from __future__ import annotations

import pytest
import torch

import robosim

N, STEPS, SEED = 4, 40, 7


def _actions(env, steps: int, seed: int) -> torch.Tensor:
    """(steps, N, A) uniform over the whole action space: arms sweep, contacts happen."""
    g = torch.Generator().manual_seed(seed)
    low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
    return low + torch.rand(steps, env.num_envs, len(low), generator=g) * (high - low)


def _rollout(env, actions, seed=SEED, perturb=None) -> torch.Tensor:
    """(T + 1, N, S) states; perturb(env, t) runs before step t."""
    env.reset(seed=seed)
    states = [env.get_state()]
    for t in range(len(actions)):
        if perturb is not None:
            perturb(env, t)
        env.step(actions[t])
        states.append(env.get_state())
    return torch.stack(states)


@pytest.fixture(scope="module")
def batch():
    env = robosim.make("PickCube-v1", num_envs=N, control_mode="pd_joint_pos", physics_isolation="separate")
    yield env
    env.close()


@pytest.fixture(scope="module")
def single():
    env = robosim.make("PickCube-v1", num_envs=1, control_mode="pd_joint_pos", physics_isolation="separate")
    yield env
    env.close()


def test_env_i_of_a_batch_equals_a_one_env_run_seeded_seed_plus_i(batch, single):
    actions = _actions(batch, STEPS, 0)
    together = _rollout(batch, actions)
    for i in (0, N - 1):
        alone = _rollout(single, actions[:, i:i + 1], seed=SEED + i)
        assert torch.equal(together[:, i], alone[:, 0]), f"env {i} differs from its 1-env run"


def test_changes_confined_to_env_3_leave_the_others_bit_identical(batch):
    actions = _actions(batch, STEPS, 1)
    reference = _rollout(batch, actions)
    changed = actions.clone()
    changed[:, 3] = _actions(batch, STEPS, 2)[:, 3]                   # other actions for env 3

    def rewrite_env_3(env, t):
        if t == 5:
            env.set_state(env.get_state()[3:4], env_idx=[3])          # its own state, written back
        if t == 9:
            env.reset(seed=99, options={"env_idx": torch.tensor([3])})

    perturbed = _rollout(batch, changed, perturb=rewrite_env_3)
    assert not torch.equal(perturbed[:, 3], reference[:, 3])
    others = [0, 1, 2]
    assert torch.equal(perturbed[:, others], reference[:, others])


def test_bad_isolation_values_are_refused():
    with pytest.raises(ValueError, match=r"physics_isolation must be one of \['shared', 'separate'\], got 'none'"):
        robosim.make("PickCube-v1", num_envs=1, physics_isolation="none")
    with pytest.raises(ValueError, match="cpu_workers must be 0 or None with physics_isolation='separate'"):
        robosim.make("PickCube-v1", num_envs=1, physics_isolation="separate",
                     physics=robosim.sim.PhysicsConfig(cpu_workers=2))
