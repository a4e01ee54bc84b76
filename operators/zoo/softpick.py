"""softpick: a rectified softmax whose denominator counts the scores below 0 too (Zuhri et al. 2025).

    W_ij = m_ij relu(exp(s_ij) - 1) / (sum_j m_ij |exp(s_ij) - 1| + eps)

Keys with s <= 0 get weight 0 exactly but still take their |exp(s) - 1| of
the denominator, so a row's mass is below 1, and 0 when no score is
positive: a head can switch off.  Stabilised as the paper does: with M_i the
row's largest visible score and at least 0, numerator and denominator are
multiplied by exp(-M_i), so every term is exp(s - M) - exp(-M) with both
exponentials at most 1, and eps enters as eps exp(-M_i) (formed as
exp(log eps - M_i) from log eps in float64, so a small eps is not rounded away
before it meets exp(-M)).  eps is a positive parameter.  A row that sees no
key is 0 / (eps exp(-M)) = 0 (declared: masked_row = 0); a denominator that
underflows to 0 has a numerator of exact 0s and is taken as 1.
"""
from __future__ import annotations

import torch

from .. import arguments, limits, projections, zoo_references
from ..registry import Domain, declare
from ..score_attention import attend, visible


def softpick_weights(xp, s, mask=None, *, eps):
    """W_tj = m_tj relu(exp(s_tj - M) - exp(-M)) / (sum_j m_tj |exp(s_tj - M) - exp(-M)| + eps exp(-M))."""
    m = visible(xp, s, mask)
    active = xp.gt(m, 0)
    zero = xp.zeros_like(s)
    # inactive entries stand in as 0, never as a score: a row that sees nothing has M = 0
    top = xp.maximum(xp.max(xp.where(active, s, zero), axis=-1, keepdims=True), 0.0)
    d = xp.where(active, xp.exp(xp.where(active, s - top, zero)) - xp.exp(-top), zero)
    den = xp.sum(xp.abs(d), axis=-1, keepdims=True) + xp.exp(xp.log_full(top, eps) - top)
    return xp.div(xp.relu(d), xp.where(xp.gt(den, 0), den, xp.ones_like(den)))


def softpick_params(gen, d_model, dtype=torch.float64, *, heads=None):
    p = projections.attention_params(gen, d_model, dtype, heads=heads)
    p["eps"] = float(10 ** torch.empty(()).uniform_(-8, -4, generator=gen))
    return p


@declare(
    name="softpick",
    domain=Domain(params=softpick_params, mask="random", positive=("eps",), limits=limits.FLOAT16_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=softpick_weights,
    reference=zoo_references.softpick_reference,
    masked_row=0.0,
    claims={
        "sub_simplex": "relu(e^s - 1) <= |e^s - 1| term by term, and eps > 0: mass below 1",
        "silence": "no positive score: every relu(exp(s) - 1) is exactly 0",
        "mask_respect": "a masked key is outside the numerator and the denominator",
        "permutation_equivariance": "no position terms",
        "masked_row": "no visible key: 0 / (eps exp(-M)) = 0",
        "finite": "every exponential is at most 1 after the shift by M >= 0; a zero denominator has a zero numerator",
        "gradcheck": "piecewise smooth; random points avoid s = 0",
    },
    violates={
        "simplex": "the keys below 0 take |exp(s) - 1| of the denominator: the mass is below 1",
        "score_shift_invariance": "exp(s + c) - 1 is not proportional to exp(s) - 1",
        "null_receiver": "a null query still gets a weighted sum of the values",
        "null_source_insertion": "a null key with a positive score takes weight; any null key adds to the denominator",
        "empty_support": "a row that sees only null tokens weighs their values b_v where their scores are positive",
        "null_gradient": "a null token's q, k, v receive gradient like any other token's",
        "zero_transcendental": "it evaluates exp",
    },
)
def softpick(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads, eps):
    """Multi-head softpick attention: relu(e^s - 1) / (sum |e^s - 1| + eps) per head, then wo."""
    arguments.positive(eps, "eps")
    return attend(xp, x, mask, softpick_weights, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads,
                  eps=eps)
