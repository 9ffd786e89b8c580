"""Parameter distributions of randomization events, declared as plain data.

    {"uniform": [low, high]}        low/high: numbers, or equal-length lists (one per dim)
    {"loguniform": [low, high]}     0 < low <= high
    {"normal": [mean, std]}         std >= 0
    {"choice": [v0, v1, ...]}       each v a number or a list of one common length
    {"integers": [low, high]}       ints in [low, high)
    3.0 or [0.1, 0.2, 0.3]          a constant

`Distribution.sample(rng)` draws one value per env of a `BatchRandom`: float32 (M, dim).

Every number must be finite and at most MAX_MAGNITUDE in size: the draws are float32,
where 1e39 is already inf (a mass range up to 1e39 gave infinite masses), and no
quantity an event sets (m, kg, N, N m, rad, s, gains or factors on them) is sane past
1e9 next to a scene of unit-scale bodies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from robosim.randomization.rng import BatchRandom

KINDS = ("uniform", "loguniform", "normal", "choice", "integers", "constant")
MAX_MAGNITUDE = 1e9   # largest |number| a distribution may name (module docstring)


def _vector(where: str, value: Any) -> list[float]:
    values = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{where} must be finite numbers, got {value!r}")
        if abs(v) > MAX_MAGNITUDE:
            raise ValueError(f"{where} must be numbers within +-{MAX_MAGNITUDE:g}, got {v!r}")
        out.append(float(v))
    if not out:
        raise ValueError(f"{where} must hold at least one number, got {value!r}")
    return out


@dataclass(frozen=True)
class Distribution:
    """A validated distribution over R^dim; `spec` is the plain-data form it came from."""

    kind: str
    params: tuple
    dim: int
    spec: Any

    @classmethod
    def parse(cls, where: str, spec: Any) -> Distribution:
        """Validate `spec` (see the module docstring); errors name `where`."""
        if not isinstance(spec, dict):
            values = _vector(where, spec)
            return cls("constant", (tuple(values),), len(values), spec)
        if len(spec) != 1 or next(iter(spec)) not in KINDS:
            raise ValueError(f"{where} must be one of {{{', '.join(KINDS[:-1])}}}: [...] or a constant, got {spec!r}")
        kind, args = next(iter(spec.items()))
        if kind == "choice":
            if not isinstance(args, (list, tuple)) or not args:
                raise ValueError(f"{where} choice must list at least one value, got {args!r}")
            options = [tuple(_vector(f"{where} choice", a)) for a in args]
            if len({len(o) for o in options}) != 1:
                raise ValueError(f"{where} choice values must all have one length, got {args!r}")
            return cls(kind, tuple(options), len(options[0]), spec)
        if not isinstance(args, (list, tuple)) or len(args) != 2:
            raise ValueError(f"{where} {kind} needs [a, b], got {args!r}")
        a, b = _vector(f"{where} {kind}", args[0]), _vector(f"{where} {kind}", args[1])
        if len(a) != len(b) and 1 not in (len(a), len(b)):
            raise ValueError(f"{where} {kind} bounds must have equal lengths, got {args!r}")
        dim = max(len(a), len(b))
        a, b = (a * dim if len(a) == 1 else a), (b * dim if len(b) == 1 else b)
        if kind in ("uniform", "loguniform", "integers") and any(lo > hi for lo, hi in zip(a, b)):
            raise ValueError(f"{where} {kind} needs low <= high, got low={args[0]!r} > high={args[1]!r}")
        if kind == "loguniform" and min(a) <= 0:
            raise ValueError(f"{where} loguniform needs low > 0, got {args[0]!r}")
        if kind == "normal" and min(b) < 0:
            raise ValueError(f"{where} normal needs std >= 0, got {args[1]!r}")
        if kind == "integers" and any(lo >= hi or lo != int(lo) or hi != int(hi) for lo, hi in zip(a, b)):
            raise ValueError(f"{where} integers needs int bounds with low < high, got {args!r}")
        return cls(kind, (tuple(a), tuple(b)), dim, spec)

    def widened(self, where: str, dim: int) -> Distribution:
        """This distribution drawn `dim` times independently (one value per element of a
        target `dim` wide), or itself when it already gives `dim` values."""
        if self.dim == dim:
            return self
        if self.dim != 1 or self.kind == "choice":
            raise ValueError(f"{where} must give 1 or {dim} value(s) per draw for a target {dim} wide, got "
                             f"{self.dim}{' (a choice of vectors)' if self.kind == 'choice' else ''}")
        params = tuple(tuple(p * dim) for p in self.params)
        return Distribution(self.kind, params, dim, self.spec)

    def bounds(self) -> tuple[float, float]:
        """(smallest, largest) value the distribution can give (normal: +-inf unless std 0)."""
        if self.kind == "constant":
            return min(self.params[0]), max(self.params[0])
        if self.kind == "choice":
            flat = [v for option in self.params for v in option]
            return min(flat), max(flat)
        a, b = self.params
        if self.kind == "normal":
            return (min(a), max(a)) if max(b) == 0 else (-math.inf, math.inf)
        return min(a), max(b) - (1 if self.kind == "integers" else 0)

    def sample(self, rng: BatchRandom) -> torch.Tensor:
        """float32 (M, dim), one row per stream of `rng`."""
        m, dev = len(rng), rng.device
        if self.kind == "constant":
            return torch.tensor(self.params[0], dtype=torch.float32, device=dev).expand(m, self.dim).clone()
        if self.kind == "choice":
            k = rng.integers(0, len(self.params), ())
            return torch.tensor(self.params, dtype=torch.float32, device=dev)[k]
        low = torch.tensor(self.params[0], dtype=torch.float64, device=dev)
        high = torch.tensor(self.params[1], dtype=torch.float64, device=dev)
        if self.kind == "uniform":
            return rng.uniform(low, high, (self.dim,))
        if self.kind == "loguniform":
            return torch.exp(rng.uniform(torch.log(low), torch.log(high), (self.dim,)))
        if self.kind == "normal":
            return rng.normal(low, high, (self.dim,))
        u = rng.uniform(0.0, 1.0, (self.dim,)).double()
        return torch.minimum(low + torch.floor(u * (high - low)), high - 1).float()
