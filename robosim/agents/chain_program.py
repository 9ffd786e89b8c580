"""A serial chain's forward kinematics and Jacobian as one straight-line function.

`compile_chain` traces the chain's frame products once, symbolically, with every URDF
constant known: terms multiplied by an exact 0 are dropped and factors of exactly 1
are skipped (most URDF origins are axis permutations and most joint axes are
coordinate axes, so about two thirds of a 3x3 product vanish). What is left is
emitted as Python source over the joint angles' cosines and sines and compiled once
per chain.

The compiled function takes 2 * dof arguments (c_0, s_0, c_1, s_1, ...) that are all
Python floats or all same-shape arrays (numpy float64 or torch tensors) and returns a
tuple of floats/arrays, constants included as floats. It uses only +, - and *, each
an IEEE operation rounded on its own (no fused multiply-add: every product is its own
Python operation), so a Python-float call and a numpy-array call give bit-identical
values, and row i of an array call does not depend on the other rows.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    """A traced value: a constant (float) or the name of an emitted variable."""
    const: float | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        return repr(self.const) if self.const is not None else self.name  # type: ignore[return-value]


ZERO, ONE = Term(const=0.0), Term(const=1.0)


class Tracer:
    """Emits one line per operation that is not folded away."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def var(self, expr: str) -> Term:
        name = f"v{len(self.lines)}"
        self.lines.append(f"    {name} = {expr}")
        return Term(name=name)

    def mul(self, a: Term, b: Term) -> Term:
        if a.const is not None and b.const is not None:
            return Term(const=a.const * b.const)
        for x, y in ((a, b), (b, a)):
            if x.const == 0.0:
                return ZERO
            if x.const == 1.0:
                return y
            if x.const == -1.0:
                return self.var(f"-{y.text}")
        return self.var(f"{a.text} * {b.text}")

    def add(self, a: Term, b: Term) -> Term:
        if a.const is not None and b.const is not None:
            return Term(const=a.const + b.const)
        if a.const == 0.0:
            return b
        if b.const == 0.0:
            return a
        return self.var(f"{a.text} + {b.text}")

    def sub(self, a: Term, b: Term) -> Term:
        if a.const is not None and b.const is not None:
            return Term(const=a.const - b.const)
        if b.const == 0.0:
            return a
        return self.var(f"{a.text} - {b.text}")

    def dot(self, a: Sequence[Term], b: Sequence[Term]) -> Term:
        """sum_k a[k] * b[k], added left to right."""
        acc = ZERO
        for x, y in zip(a, b):
            acc = self.add(acc, self.mul(x, y))
        return acc

    def matmul(self, a: list[list[Term]], b: list[list[Term]]) -> list[list[Term]]:
        return [[self.dot(a[i], [b[k][j] for k in range(3)]) for j in range(3)] for i in range(3)]

    def matvec(self, a: list[list[Term]], v: Sequence[Term]) -> list[Term]:
        return [self.dot(a[i], v) for i in range(3)]


def _consts(values: Sequence[float]) -> list[Term]:
    return [Term(const=float(v)) for v in values]


def _axis_rotation(tr: Tracer, axis: Sequence[float], c: Term, s: Term) -> list[list[Term]]:
    """Rotation by the angle with cosine c and sine s about the constant unit `axis`:
    entry (i, j) = (t * a_i) * a_j + (c on the diagonal, else s * [axis]x_ij), t = 1 - c."""
    x, y, z = (Term(const=float(v)) for v in axis)
    t = tr.sub(ONE, c)
    cross = [[ZERO, Term(const=-z.const), y], [z, ZERO, Term(const=-x.const)], [Term(const=-y.const), x, ZERO]]
    a = (x, y, z)
    return [[tr.add(tr.mul(tr.mul(t, a[i]), a[j]), c if i == j else tr.mul(s, cross[i][j])) for j in range(3)]
            for i in range(3)]


@dataclass(frozen=True)
class ChainLink:
    """One joint of the chain: constant origin (rotation rows (3, 3), position (3,)) and,
    for a movable joint, its unit axis (3,) in the joint frame (None: fixed)."""
    origin_rot: tuple[tuple[float, ...], ...]
    origin_pos: tuple[float, ...]
    axis: tuple[float, ...] | None


def compile_chain(links: Sequence[ChainLink], jacobian: bool) -> Callable[..., tuple]:
    """The chain's FK as a function of (c_0, s_0, ..., c_{dof-1}, s_{dof-1}).

    Returns values in this order: tip position (3), tip rotation row-major (9), and with
    `jacobian` the geometric Jacobian [linear; angular] row-major (6 * dof), all in the
    chain's root frame."""
    tr = Tracer()
    dof = sum(link.axis is not None for link in links)
    args = [f"{n}{j}" for j in range(dof) for n in ("c", "s")]
    rot = [_consts(row) for row in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]
    pos = [ZERO, ZERO, ZERO]
    axes, origins = [], []
    for link in links:
        pos = [tr.add(p, d) for p, d in zip(pos, tr.matvec(rot, _consts(link.origin_pos)))]
        rot = tr.matmul(rot, [_consts(row) for row in link.origin_rot])
        if link.axis is not None:
            j = len(axes)
            axes.append(tr.matvec(rot, _consts(link.axis)))
            origins.append(pos)
            rot = tr.matmul(rot, _axis_rotation(tr, link.axis, Term(name=f"c{j}"), Term(name=f"s{j}")))
    out = pos + [e for row in rot for e in row]
    if jacobian:
        linear = []
        for z, o in zip(axes, origins):
            r = [tr.sub(p, oo) for p, oo in zip(pos, o)]
            linear.append([tr.sub(tr.mul(z[(i + 1) % 3], r[(i + 2) % 3]), tr.mul(z[(i + 2) % 3], r[(i + 1) % 3]))
                           for i in range(3)])
        out += [linear[j][i] for i in range(3) for j in range(dof)]
        out += [axes[j][i] for i in range(3) for j in range(dof)]
    source = "\n".join([f"def chain_program({', '.join(args)}):", *tr.lines,
                        f"    return ({', '.join(t.text for t in out)},)"])
    namespace: dict = {}
    exec(compile(source, f"<robosim chain program, {len(tr.lines)} operations>", "exec"), namespace)
    fn = namespace["chain_program"]
    fn.source = source
    return fn
