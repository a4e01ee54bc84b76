"""rela: rectified linear attention with its output RMS-normalised (ReLA, Zhang, Titov & Sennrich 2021).

    a_ij = m_ij relu(s_ij)                                    (no normalisation over the row)
    o_i  = sum_j a_ij v_j                                     per head, (d_h,)
    o'_i = o_i / sqrt(mean_k o_ik^2 + eps)                    RMSNorm over each head's d_h features
    out  = merge_heads(o') W_o

This is ReLA's plain form (its RMSNorm variant, without the gated one): the
scores are rectified instead of normalised, and each head's output is
normalised instead.  RMSNorm's gain g is not a parameter of its own here:
g * o' followed by W_o is o' followed by diag(g) W_o, so W_o holds it.  A
head whose scores are all <= 0 has a = 0, o = 0 and o' = 0 / sqrt(eps) = 0:
it switches off, exactly.  eps > 0 is a parameter, drawn where float16 holds
it as a normal number.  The row map the score laws read off the output is
the rectification followed by the normalisation: not a distribution.  A row
that sees no key is 0 (declared: masked_row = 0).  No exp or log: relu, a
square root and divisions.

Neither o nor its mean of squares is formed as such (in float16 both overflow
while o' lies in [-1, 1]): o = c o_bar with o_bar = (a / sum_j a) v a convex
combination of the values and c = sum_j a; then with A = max_k |o_bar_k|,
u = o_bar / A in [-1, 1] and r = c A / sqrt(eps), o' = u / sqrt(mean u^2 +
1/r^2) for r >= 1 and u r / sqrt(r^2 mean u^2 + 1) for r < 1: the same value
in the reals, every intermediate bounded (r may be inf: then 1/r = 0, the
limit).
"""
from __future__ import annotations

import torch

from .. import arguments, limits, projections, zoo_references
from ..registry import Domain, Interval, declare
from ..score_attention import visible


def rela_weights(xp, s, mask=None):
    """a_tj = m_tj relu(s_tj): the rectified scores, before the output's RMS normalisation."""
    return xp.where(xp.gt(visible(xp, s, mask), 0), xp.relu(s), xp.zeros_like(s))


def _safe(xp, t):
    """t where it is > 0, else 1 (a zero row of weights divides nothing: its numerator is 0 too)."""
    return xp.where(xp.gt(t, 0), t, xp.ones_like(t))


def rms_normalise(xp, o, eps, scale):
    """(scale o) / sqrt(mean((scale o)^2) + eps) over the last axis (each head's features), where the product
    scale * o (a per-row factor times bounded outputs) need not be representable: no intermediate exceeds it."""
    a = xp.max(xp.abs(o), axis=-1, keepdims=True)
    one = xp.ones_like(a)
    unit = xp.div(o, _safe(xp, a))                                      # max |unit| = 1 (or o = 0)
    msq = xp.mean(unit * unit, axis=-1, keepdims=True)                  # in [1/dh, 1] (or 0)
    r = xp.div(a, xp.sqrt(xp.full_like(a, 1.0) * eps)) * scale          # |scale o|_max / sqrt(eps); inf past range
    low = xp.lt(r, 1.0)
    inv = xp.div(one, xp.where(low, one, r))                            # 1 / r <= 1 where r >= 1 (0 at inf)
    small = xp.where(low, r, xp.zeros_like(r))                          # r < 1 where r < 1
    return xp.where(low, xp.div(unit * small, xp.sqrt(small * small * msq + 1.0)),
                    xp.div(unit, xp.sqrt(msq + inv * inv)))


def rela_params(gen, d_model, dtype=torch.float64, *, heads=None):
    p = projections.attention_params(gen, d_model, dtype, heads=heads)
    p["eps"] = float(10 ** torch.empty(()).uniform_(-4, -2, generator=gen))
    return p


@declare(
    name="rela",
    domain=Domain(params=rela_params, mask="random", intervals={"eps": Interval(1e-4, 1e-2)},
                  limits=limits.FLOAT16_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=rela_weights,
    reference=zoo_references.rela_reference,
    masked_row=0.0,
    claims={
        "silence": "no positive score: relu gives a = 0, so o = 0 and o / sqrt(0 + eps) = 0",
        "mask_respect": "a masked key gets a_ij = 0",
        "permutation_equivariance": "no position terms",
        "masked_row": "no visible key: a = 0, o = 0, normalised 0",
        "finite": "the RMS denominator is at least sqrt(eps) > 0, and formed from values in [-1, 1]",
        "zero_transcendental": "relu, a mean of squares, square roots and divisions",
        "gradcheck": "piecewise smooth; random points avoid s = 0",
    },
    violates={
        "simplex": "the rectified scores are not normalised over the row",
        "sub_simplex": "rectified scores, rescaled by the output's RMS, sum past 1",
        "score_shift_invariance": "relu(s + c) is not relu(s) shifted: lowering a row switches keys off",
        "null_receiver": "a null query still scores the keys through b_q and gets their values",
        "null_source_insertion": "a null key with a positive score adds its value b_v to the output",
        "empty_support": "a row that sees only null tokens weighs their values b_v where their scores are positive",
        "null_gradient": "a null token's q, k, v receive gradient like any other token's",
    },
)
def rela(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads, eps):
    """Multi-head ReLA: RMSNorm(relu(q k^T / sqrt(dh)) v) per head, then wo."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    arguments.positive(eps, "eps")
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    a = rela_weights(xp, projections.scores(xp, q, k), projections.head_mask(mask))
    # o = a v is not formed (float16: 130 keys of score 1e4 and values 30 overflow it, though o' is in
    # [-1, 1]): a = c abar with abar a row of weights summing to 1 and c = max_j a * sum_j (a / max_j a)
    top = xp.max(a, axis=-1, keepdims=True)
    rel = xp.div(a, _safe(xp, top))
    total = xp.sum(rel, axis=-1, keepdims=True)
    o = xp.matmul(xp.div(rel, _safe(xp, total)), v)                    # a convex combination of the values (or 0)
    return projections.output(xp, rms_normalise(xp, o, eps, top * total), wo)
