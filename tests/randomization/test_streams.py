"""Counter-based per-env random streams: the seeding contract (docs/design.md, Public contract)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from splitmix_reference import MASK as _MASK
from splitmix_reference import reference_mix

from robosim.randomization import EnvRandomStreams
from robosim.randomization.rng import mix


def _reference_mix(*words: int) -> int:
    """splitmix64 as robosim's int64 tensors hold it (signed)."""
    h = reference_mix(*words)
    return h - (1 << 64) if h >> 63 else h


@pytest.mark.parametrize("words", [(0,), (12, 5, 3), (2**62 + 7, 0x5EEDB11D, 9), (-5, 1), (2**63 - 1, -(2**63))])
def test_mix_is_splitmix64_bit_for_bit(words):
    got = mix(*[torch.tensor(w, dtype=torch.int64) for w in words])
    assert int(got) == _reference_mix(*[w & _MASK for w in words])


def _draw(streams: EnvRandomStreams, idx) -> torch.Tensor:
    rng = streams.next_episode(np.asarray(idx))
    return torch.cat([rng.uniform(-1, 1, (3,)), rng.normal(0, 1, (2,)), rng.integers(0, 7, (4,)).float()], dim=1)


def test_env_draws_depend_only_on_its_seed_and_episode():
    big = EnvRandomStreams(4)
    big.seed([10, 11, 12, 13], np.arange(4))
    one = EnvRandomStreams(1)
    one.seed([12], np.arange(1))
    for _ in range(3):   # episodes 0, 1, 2
        assert torch.equal(_draw(big, np.arange(4))[2], _draw(one, [0])[0])


def test_partial_reset_leaves_other_streams_alone_and_order_does_not_matter():
    a, b = EnvRandomStreams(5), EnvRandomStreams(5)
    for s in (a, b):
        s.seed([100, 101, 102, 103, 104], np.arange(5))
    first_a = _draw(a, [0, 1, 2, 3, 4])
    _draw(b, [3])                       # b: env 3 alone, then the rest, reversed
    rest_b = _draw(b, [4, 2, 1, 0])
    assert torch.equal(first_a[[4, 2, 1, 0]], rest_b)
    # env 3's second episode equals a's second episode of env 3
    assert torch.equal(_draw(a, [3]), _draw(b, [3]))


def test_subset_continues_each_rows_stream():
    """Rejection sampling: redrawing only some rows consumes only their streams."""
    s = EnvRandomStreams(3)
    s.seed([7, 8, 9], np.arange(3))
    rng = s.next_episode(np.arange(3))
    rng.uniform(0, 1, (2,))
    again = rng.subset(torch.tensor([False, True, False])).uniform(0, 1, (2,))
    after = rng.uniform(0, 1)
    solo = EnvRandomStreams(1)
    solo.seed([8], np.arange(1))
    r1 = solo.next_episode(np.arange(1))
    r1.uniform(0, 1, (2,))
    assert torch.equal(again[0], r1.uniform(0, 1, (2,))[0])
    assert torch.equal(after[1], r1.uniform(0, 1)[0])
    solo0 = EnvRandomStreams(1)
    solo0.seed([7], np.arange(1))
    r0 = solo0.next_episode(np.arange(1))
    r0.uniform(0, 1, (2,))
    assert torch.equal(after[0], r0.uniform(0, 1)[0])   # row 0 skipped the redraw


def test_build_streams_differ_from_episode_streams_and_between_builds():
    s = EnvRandomStreams(2)
    s.seed([1, 1], np.arange(2))
    b0, b1 = s.next_build().uniform(0, 1, (4,)), s.next_build().uniform(0, 1, (4,))
    e0 = s.next_episode(np.arange(2)).uniform(0, 1, (4,))
    assert torch.equal(b0[0], b0[1])           # same seed, same build: same draws
    assert not torch.equal(b0, b1) and not torch.equal(b0, e0)


def test_restore_repeats_the_draws_that_followed_the_snapshot():
    s = EnvRandomStreams(3)
    s.seed([5, 6, 7], np.arange(3))
    _draw(s, [0, 1, 2])
    snap = s.snapshot()
    after = [_draw(s, [0, 1, 2]), _draw(s, [1])]
    s.seed([50, 60, 70], np.arange(3))            # other seeds and episodes in between
    _draw(s, [2])
    s.restore(snap)
    assert torch.equal(_draw(s, [0, 1, 2]), after[0]) and torch.equal(_draw(s, [1]), after[1])
    # the snapshot holds clones: drawing after the restore did not change it
    assert snap.base_seeds.tolist() == [5, 6, 7] and snap.episode.tolist() == [0, 0, 0]
    with pytest.raises(TypeError, match="snapshot must be a StreamsSnapshot"):
        s.restore((snap.base_seeds, snap.episode))
    with pytest.raises(ValueError, match=r"snapshot must hold \(3,\)"):
        s.restore(EnvRandomStreams(2).snapshot())


def test_build_seeds_and_restart_builds():
    s = EnvRandomStreams(2)
    s.seed([1, 2], np.arange(2))
    assert s.build_seeds is None and s.seeds_changed_since_build()
    first = s.next_build().uniform(0, 1, (3,))
    assert s.build_seeds.tolist() == [1, 2] and not s.seeds_changed_since_build()
    s.next_build()                                 # build 1
    s.seed([3, 4], np.arange(2))
    assert s.seeds_changed_since_build() and s.build_seeds.tolist() == [1, 2]
    s.seed([1, 2], np.arange(2))
    s.restart_builds()                             # the next build is build 0 again
    assert torch.equal(s.next_build().uniform(0, 1, (3,)), first) and s.build == 0


def test_distributions_have_the_stated_range_and_moments():
    s = EnvRandomStreams(2000)
    s.seed(list(range(2000)), np.arange(2000))
    rng = s.next_episode(np.arange(2000))
    u = rng.uniform(-2.0, 3.0, (50,))
    n = rng.normal(1.0, 0.5, (50,))
    k = rng.integers(3, 8, (50,))
    assert u.dtype == n.dtype == torch.float32 and k.dtype == torch.int64
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean().item() - 0.5) < 0.02
    assert abs(n.mean().item() - 1.0) < 0.01 and abs(n.std().item() - 0.5) < 0.01
    assert set(k.unique().tolist()) == {3, 4, 5, 6, 7}
    # neighbouring seeds and neighbouring draws are uncorrelated
    assert abs(np.corrcoef(u[:-1, 0], u[1:, 0])[0, 1]) < 0.1
    assert abs(np.corrcoef(u[:, 0], u[:, 1])[0, 1]) < 0.1


def test_bad_input_names_the_argument():
    s = EnvRandomStreams(3)
    rng = s.next_episode(np.arange(3))
    with pytest.raises(ValueError, match="size must be"):
        rng.uniform(0, 1, (2.5,))
    with pytest.raises(ValueError, match="mask must be"):
        rng.subset(torch.tensor([True, False]))
    with pytest.raises(ValueError, match="seeds must have"):
        s.seed([1, 2], np.arange(3))
    with pytest.raises(ValueError, match="integers needs high > low"):
        rng.integers(3, 3)
