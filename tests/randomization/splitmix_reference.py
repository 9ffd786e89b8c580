"""splitmix64 written out on Python ints, independent of robosim's torch code: the
reference the stream tests compare robosim's draws with."""
from __future__ import annotations

MASK = (1 << 64) - 1


def reference_mix(*words: int) -> int:
    """splitmix64 chained over the words (each taken mod 2**64)."""
    def fin(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)
    h = fin((words[0] + 0x9E3779B97F4A7C15) & MASK)
    for w in words[1:]:
        h = fin((h + (w & MASK) + 0x9E3779B97F4A7C15) & MASK)
    return h
