"""Sequence contracts: masks, permutations, causality, limits and reference formulas (SPEC 3)."""
from __future__ import annotations

import dataclasses

import torch

from tokenlaw.operators.sdpa import sdpa
from tokenlaw.operators.xp import TORCH

from . import transforms as T
from . import verdict as V
from .case import cast
from .catalogue import contract
from .judging import relation


@contract(exact=False, requires={"masked"})
def mask_respect(case):
    """m_ij = 0 implies out_i does not depend on h_j."""
    if case.n < 2:
        return V.holds(0.0, 0.0, "one token: nothing is masked")
    j = case.pos % case.n
    m = case.mask.clone()
    m[:, (j + 1) % case.n, j] = 0.0                  # at least one receiver that cannot see j
    hidden = m[:, :, j] == 0                          # (B, N) receivers blind to j
    hidden[:, j] = False                              # j's own output reads h_j through its query
    x2 = case.x.clone()
    x2[:, j] = case.random_like(x2[:, j].shape, salt=5, scale=10.0)
    return relation(case, lambda dt: case.run(x2, m, dtype=dt)[hidden],
                    lambda dt: case.run(case.x, m, dtype=dt)[hidden], f"receivers blind to token {j} after changing it")


@contract(exact=False, requires={"token_mixing"})
def permutation_equivariance(case):
    """Without position terms F(pi H) = pi F(H) (masks permuted alike)."""
    perm = case.permutation()
    xp_, mp = T.permute(case.x, perm), T.permute_mask(case.mask, perm)
    return relation(case, lambda dt: case.run(xp_, mp, dtype=dt),
                    lambda dt: T.permute(case.run(case.x, case.mask, dtype=dt), perm), f"permutation {perm.tolist()}")


@contract(exact=False, requires={"causal"})
def causality(case):
    """out_t depends only on inputs at positions <= t."""
    if case.n < 2:
        return V.holds(0.0, 0.0, "one token: no future")
    t = case.pos % (case.n - 1)
    x2 = case.x.clone()
    x2[:, t + 1:] = case.random_like(x2[:, t + 1:].shape, salt=6, scale=5.0)
    return relation(case, lambda dt: case.run(x2, case.mask, dtype=dt)[:, : t + 1],
                    lambda dt: case.run(case.x, case.mask, dtype=dt)[:, : t + 1], f"outputs <= {t} after changing tokens > {t}")


@contract(exact=False, requires={"presence", "masked"}, dtypes=("float64", "float32"))
def softmax_reduction(case):
    """All tokens active, tau -> 0, eps_den -> 0: the operator reduces to SDPA."""
    # "all tokens active": near-null rows (|h|^2 far below tau) are not in this law's domain
    x = dataclasses.replace(case, near_null=(), _cache={}).x_dense
    tau, eps_den = 1e-30, 1e-300
    attn = {k: v for k, v in case.params.items() if k in ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "heads")}

    mask = case.mask
    if mask is not None:                 # every row sees itself: SDPA of an empty row is 0/0, not a limit
        mask = mask.clone()
        mask[:, torch.arange(case.n), torch.arange(case.n)] = 1.0

    def limit(dt):
        return case.run(x, mask, dtype=dt, tau=tau, eps_den=eps_den)

    def reference(dt):
        with torch.no_grad():
            return sdpa(TORCH, x.to(dt), None if mask is None else mask.to(dt), **cast(attn, dt))

    # The limit is not reached exactly: |p_j - 1| <= tau / min |h_j|^2 and eps_den
    # perturbs each denominator by at most eps_den / (its smallest term); both
    # scale the output by at most that relative amount.
    sq_min = float((x * x).sum(-1).min())
    gap = 4 * (tau / sq_min + eps_den) * float(reference(torch.float64).abs().max())
    return relation(case, limit, reference, f"limit tau, eps_den -> 0 vs SDPA (analytic gap {gap:.2g})", allowance=gap)


@contract(exact=False, dtypes=("float64", "float32"), needs={"reference"})
def formula_equivalence(case):
    """The stabilised implementation equals the declared direct formula (e.g. SPEC's OAttention with eps_den)."""
    def direct(dt):
        with torch.no_grad():
            return case.op.reference(TORCH, case.x.to(dt), **case.arguments(case.mask, dt))

    return relation(case, lambda dt: case.run(case.x, case.mask, dtype=dt), direct, "implementation vs direct formula")
