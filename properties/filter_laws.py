"""Linear-filter contracts for the causal FIR (docs/mathematics.md#fir, docs/mathematics.md#filter-laws)."""
from __future__ import annotations

import torch

from . import statement as S
from tokenlaw.operators.references import spec_taps

from .contract import AdversaryOptions, SHARED_AXES, SymbolicOptions, contract
from .judging import relation, worst

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 40

_FILTER = dict(requires={"filter"})


def taps(case) -> tuple:
    """The expected taps: drawn ones when the case passes taps, else those of docs/mathematics.md#fir (never the operator's own constant).

    docs/mathematics.md#fir: w_k ∝ exp(-k^2 / 8), k = 0..6, normalised to sum 1 (recomputed in
    tokenlaw.operators.references, which shares nothing with operators/fir.py).
    """
    own = case.op.domain.roles.taps
    if own in case.params:
        return tuple(case.params[own])
    return spec_taps()


def dc_response(xp, run, x, level, taps):
    """A constant input comes out unchanged after the warm-up (len(taps) - 1 tokens); an impulse at 0 comes out
    as the taps (statement, symbolic tier: tokenlaw.properties.statement)."""
    n, warm = x.shape[1], len(taps) - 1
    const = level * xp.ones_like(x)
    claims = [S.equal(run(const, None)[:, warm:], const[:, warm:], f"constant input after the {warm}-token warm-up")]
    impulse = xp.zeros_like(x)
    impulse[:, 0] = 1
    expected = xp.zeros_like(x)
    for k, w in enumerate(taps):
        if k < n:
            expected[:, k] = w
    return claims + [S.equal(run(impulse, None), expected, "impulse at 0 vs the taps")]


@contract(exact=False, **_FILTER,
          symbolic=SymbolicOptions(shape=(7, 1), statement=dc_response, inputs=(("level", "level"),),
                                   tokens=lambda at: max(at.n, len(at.params[at.roles.taps])),
                                   says=lambda at: f"constant in => constant out from token "
                                                   f"{len(at.params[at.roles.taps]) - 1}; impulse at 0 => the taps"),
          adversary=AdversaryOptions(rank=8, sees=frozenset({"drop_key"})))
def dc_gain(case):
    """A constant input comes out unchanged after the warm-up; an impulse comes out as the taps."""
    w = taps(case)
    level = case.random_like((case.batch, 1, case.d), salt=31)
    const = level.expand(case.batch, case.n, case.d).contiguous()
    warm = len(w) - 1
    checks = []
    if case.n > warm:
        checks.append(relation(case, lambda dt: case.runner.run(const, dtype=dt)[:, warm:],
                               lambda dt: const[:, warm:], "constant input after warm-up"))
    t0 = case.pos % case.n
    impulse = torch.zeros(case.batch, case.n, case.d, dtype=torch.float64)
    impulse[:, t0] = 1.0
    expected = torch.zeros_like(impulse)
    for k, wk in enumerate(w):
        if t0 + k < case.n:
            expected[:, t0 + k] = wk
    checks.append(relation(case, lambda dt: case.runner.run(impulse, dtype=dt), lambda dt: expected,
                           f"impulse at {t0} vs the taps"))
    return worst(*checks)


def superposes(xp, run, x, y, a, b):
    """F(a x + b y) = a F(x) + b F(y) (statement, both tiers: tokenlaw.properties.statement)."""
    return [S.equal(run(a * x + b * y, None), a * run(x, None) + b * run(y, None), f"a = {a}, b = {b}")]


@contract(exact=False, **_FILTER,
          symbolic=SymbolicOptions(shape=(3, 1), statement=superposes, inputs=(("y", "sequence"), ("a", "real"),
                                                                                ("b", "real")),
                                   says=lambda at: "F(a x + b y) = a F(x) + b F(y) for all reals a, b"),
          adversary=AdversaryOptions(rank=9, sees=frozenset({"drop_key"}), scale_blind=SHARED_AXES))
def linearity(case):
    """F(a x + b y) = a F(x) + b F(y)."""
    a, b = case.shift, -0.75
    y = case.random_like(case.x.shape, salt=32)
    return S.judge(case, lambda xp, run: superposes(xp, run, case.x, y, a, b))
