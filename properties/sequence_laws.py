"""Sequence contracts: masks, permutations, causality, limits and reference formulas (docs/mathematics.md#sequence-laws)."""
from __future__ import annotations

import dataclasses
import math

import torch

from tokenlaw.operators.sdpa import sdpa
from tokenlaw.operators.xp import TORCH

from . import statement as S
from . import verdict as V
from .case import cast
from .contract import AdversaryOptions, FuzzOptions, SHARED_AXES, SymbolicOptions, contract
from .judging import relation
from .tolerance import UNIT_ROUNDOFF

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 20


# -- statements (both tiers: see tokenlaw.properties.statement) ---------------------------

def blind_rows(xp, run, x, mask, j, y, rows):
    """Receivers ``rows`` (an index into the output) that cannot see token j keep their
    outputs when h_j is replaced by y."""
    return [S.equal(run(S.with_token(x, j, y), mask)[rows], run(x, mask)[rows],
                    f"receivers blind to token {j} after changing it")]


def permuted(xp, run, x, mask, perm):
    """F(pi x) = pi F(x), the mask permuted alike."""
    mp = None if mask is None else mask[:, perm][:, :, perm]
    return [S.equal(run(x[:, perm], mp), run(x, mask)[:, perm], f"permutation {list(map(int, perm))}")]


def past_unchanged(xp, run, x, mask, y, t):
    """Outputs <= t are unchanged when the tokens after t are replaced by y's."""
    x2 = S.copy(x)
    x2[:, t + 1:] = y[:, t + 1:]
    return [S.equal(run(x2, mask)[:, : t + 1], run(x, mask)[:, : t + 1],
                    f"outputs <= {t} after changing tokens > {t}")]


def same_as_reference(xp, run, x, mask):
    """The implementation equals the declared direct formula."""
    return [S.equal(run(x, mask), run.reference(x, mask), "implementation vs direct formula")]


# -- contracts (the fuzz tier's choices of the statements' inputs) ------------------------

@contract(exact=False, requires={"masked"},
          symbolic=SymbolicOptions(shape=(2, 1), statement=blind_rows, inputs=(("y", "token"),),
                                   cases=lambda at: [(dict(j=j, rows=(slice(None), i)), ((i, j),))
                                                     for i in range(at.n) for j in range(at.n) if i != j],
                                   case_premise="m_ij = 0 for the chosen pair",
                                   says=lambda at: f"for every i != j < {at.n}: m_ij = 0 => out_i unchanged when "
                                                   "h_j is replaced by any y"),
          adversary=AdversaryOptions(sees=frozenset({"leak_future"}), scale_blind=SHARED_AXES))
def mask_respect(case):
    """m_ij = 0 implies out_i does not depend on h_j."""
    if case.n < 2:
        return V.holds(0.0, 0.0, "one token: nothing is masked")
    j = case.pos % case.n
    m = case.mask.clone()
    m[:, (j + 1) % case.n, j] = 0.0                  # at least one receiver that cannot see j
    hidden = m[:, :, j] == 0                          # (B, N) receivers blind to j
    hidden[:, j] = False                              # j's own output reads h_j through its query
    y = case.random_like(case.x[:, j].shape, salt=5, scale=10.0)
    return S.judge(case, lambda xp, run: blind_rows(xp, run, case.x, m, j, y, hidden))


def _cyclic(n) -> list:
    """A cyclic shift: with the swap it generates every permutation."""
    return list(range(1, n)) + [0]


@contract(exact=False, requires={"token_mixing"},
          symbolic=SymbolicOptions(shape=(2, 1), statement=permuted, at=lambda at: [dict(perm=_cyclic(at.n))],
                                   says=lambda at: f"F(pi H) = pi F(H) for the cyclic permutation {_cyclic(at.n)}"),
          adversary=AdversaryOptions(sees=frozenset({"position"}), scale_blind=SHARED_AXES))
def permutation_equivariance(case):
    """Without position terms F(pi H) = pi F(H) (masks permuted alike)."""
    perm = case.permutation()
    return S.judge(case, lambda xp, run: permuted(xp, run, case.x, case.mask, perm))


@contract(exact=False, requires={"causal"},
          symbolic=SymbolicOptions(shape=(3, 1), statement=past_unchanged, inputs=(("y", "sequence"),),
                                   at=lambda at: [dict(t=t) for t in range(at.n - 1)],
                                   says=lambda at: f"for every t < {at.n - 1}: out_<=t unchanged when tokens > t "
                                                   "are replaced"),
          adversary=AdversaryOptions(sees=frozenset({"leak_future"}), scale_blind=SHARED_AXES))
def causality(case):
    """out_t depends only on inputs at positions <= t."""
    if case.n < 2:
        return V.holds(0.0, 0.0, "one token: no future")
    t = case.pos % (case.n - 1)
    y = torch.zeros_like(case.x)
    y[:, t + 1:] = case.random_like(y[:, t + 1:].shape, salt=6, scale=5.0)
    return S.judge(case, lambda xp, run: past_unchanged(xp, run, case.x, case.mask, y, t))


# fuzz: the limit eps_den -> 0 is uniform only while eps_den << sum_j exp(s_ij); past s = -709 the
# exact OAttention output is ~0 while SDPA's is not.
@contract(exact=False, requires={"presence", "masked"}, dtypes=("float64", "float32"),
          symbolic=SymbolicOptions(none="a limit tau, eps_den -> 0: not a first-order statement at fixed parameters"),
          fuzz=FuzzOptions(scales=(1.0, 4.0), bias_scales=(1.0, 4.0), offsets=False),
          adversary=AdversaryOptions(rank=3, sees=frozenset({"drop_key"})))
def softmax_reduction(case):
    """All tokens active, tau -> 0, eps_den -> 0: the operator reduces to SDPA."""
    # "all tokens active": near-null rows (|h|^2 far below tau) are not in this law's domain
    x = dataclasses.replace(case, near_null=()).x_dense
    tau, eps_den = 1e-30, 1e-300
    roles = case.op.domain.roles
    attn = roles.standard(case.params)             # the projections, under the names SDPA takes

    mask = case.mask
    if mask is not None:                 # every row sees itself: SDPA of an empty row is 0/0, not a limit
        mask = mask.clone()
        mask[:, torch.arange(case.n), torch.arange(case.n)] = 1.0

    def limit(dt):
        return case.runner.run(x, mask, dtype=dt, **roles.named(dict(threshold=tau, eps_den=eps_den)))

    def reference(dt):
        with torch.no_grad():
            return sdpa(TORCH, x.to(dt), None if mask is None else mask.to(dt), **cast(attn, dt))

    # The limit is not reached exactly: |p_j - 1| <= tau / min |h_j|^2 and eps_den
    # perturbs each denominator by at most eps_den / (its smallest term); both
    # scale the output by at most that relative amount.
    sq_min = float((x * x).sum(-1).min())
    gap = 4 * (tau / sq_min + eps_den) * float(reference(torch.float64).abs().max())
    return relation(case, limit, reference, f"limit tau, eps_den -> 0 vs SDPA (analytic gap {gap:.2g})", allowance=gap)


# fuzz: the reference is the *unstabilised* formula, whose exp(s) overflows float64 past s = 709:
# magnitudes stay where it is finite.
@contract(exact=False, dtypes=("float64", "float32"), needs={"reference"},
          symbolic=SymbolicOptions(shape=(2, 1), statement=same_as_reference, exp_product=True,
                                   says=lambda at: "implementation(x, m) = reference formula(x, m) (eps_den included)"),
          fuzz=FuzzOptions(scales=(1.0,), bias_scales=(1.0,), offsets=False),
          adversary=AdversaryOptions(rank=2, sees=frozenset({"drop_key"})))
def formula_equivalence(case):
    """The stabilised implementation equals the declared direct formula (e.g. OAttention's with eps_den)."""
    x, mask = case.x, case.mask

    def implementation(dt):
        return case.runner.run(x, mask, dtype=dt)

    def reference(dt, **overrides):
        with torch.no_grad():
            return case.op.reference(TORCH, x.to(dt), **case.runner.arguments(mask, dt, **overrides))

    return relation(case, implementation, reference, "implementation vs direct formula",
                    allowance=log_held_eps_den(case, reference))


def log_held_eps_den(case, reference):
    """|F(eps_den e^(+-delta)) - F(eps_den)|, delta = u_D |ln eps_den|, elementwise, in float64 (0 without eps_den).

    A stabilised form works in log space (OAttention: M_i >= log eps_den, eps_den enters
    as exp(log eps_den - M_i)), so it holds eps_den only as exp(fl_D(ln eps_den)): eps_den
    times exp(delta'), |delta'| <= u_D |ln eps_den|.  That one rounding, at magnitude
    |ln eps_den| (80.6 at 1e35), is carried to the output at first order, and it is a
    single draw per dtype: fl64(ln 1e35) is off by 0.75 of its half-ulp, fl32's by 0.26,
    so the float32 probe's error understates float64's (fuzz, float64, eps_den = 1e35:
    |impl - ref| = 107 u |out|, of which 59 u is exactly this term; the probe's bound was
    100 u).  The term is computed outright here on the direct formula, not extrapolated,
    as tolerance.differential does for input rounding.
    """
    own = case.op.domain.roles.eps_den
    eps = case.params.get(own)
    if case.op.domain.scalar(own) is None or not eps or eps <= 0:
        return 0.0
    delta = UNIT_ROUNDOFF[case.dtype] * abs(math.log(eps))
    base = reference(torch.float64).double()
    moved = [(reference(torch.float64, **{own: eps * math.exp(sign * delta)}).double() - base).abs()
             for sign in (-1.0, 1.0)]
    return torch.nan_to_num(torch.maximum(*moved), nan=0.0, posinf=0.0)
