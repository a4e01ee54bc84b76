"""sigmoid_attn: an elementwise sigmoid in place of the softmax (Ramapuram et al. 2024).

    W_ij = m_ij sigma(s_ij + b_i),   b_i = -log n_i,   n_i = sum_j m_ij

n_i counts the keys row i's mask leaves visible (project choice, stated: with
n = every key, inserting a masked key would change every weight of the row,
so the mask would not be respected in that sense).  sigma(s - log n) =
exp(s) / (exp(s) + n): each weight is below 1, but the row's mass is
anywhere in (0, n), so neither simplex nor sub-simplex.  Evaluated without
overflow as 1 / (1 + e) or e / (1 + e) with e = exp(-|s - log n|) <= 1.  A row
that sees no key has n = 0 (taken as 1 inside the log) and every weight
m_ij sigma(...) = 0 (declared: masked_row = 0).
"""
from __future__ import annotations

from .. import limits, projections, zoo_references
from ..registry import Domain, declare
from ..score_attention import attend, visible


def sigmoid_weights(xp, s, mask=None):
    """W_tj = m_tj sigma(s_tj - log n_t), n_t the number of visible keys of row t."""
    m = visible(xp, s, mask)
    count = xp.sum(m, axis=-1, keepdims=True)
    t = s - xp.log(xp.where(xp.gt(count, 0), count, xp.ones_like(count)))
    e = xp.exp(-xp.abs(t))                                   # <= 1: never overflows
    sig = xp.where(xp.gt(t, 0), xp.div(xp.ones_like(e), 1.0 + e), xp.div(e, 1.0 + e))
    return xp.where(xp.gt(m, 0), sig, xp.zeros_like(s))


@declare(
    name="sigmoid_attn",
    domain=Domain(params=projections.attention_params, mask="random", limits=limits.FLOAT16_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=sigmoid_weights,
    reference=zoo_references.sigmoid_reference,
    masked_row=0.0,
    claims={
        "mask_respect": "a masked key gets weight 0, and n counts visible keys only: h_j enters nowhere",
        "permutation_equivariance": "no position terms; n is a count",
        "masked_row": "no visible key: every weight is m_ij sigma(...) = 0",
        "finite": "sigma is evaluated through exp(-|t|) <= 1",
        "gradcheck": "smooth in its inputs",
    },
    violates={
        "simplex": "weights are independent sigmoids: the row mass is anywhere in (0, n)",
        "sub_simplex": "n keys with large scores each get weight near 1: mass near n > 1",
        "score_shift_invariance": "sigma(s + c - log n) moves with c",
        "silence": "scores <= 0 still give weights sigma(s - log n) > 0",
        "null_receiver": "a null query still gets a weighted sum of the values",
        "null_source_insertion": "a null key takes weight sigma(s - log n) and changes n for every row it is seen by",
        "empty_support": "a row that sees only null tokens weighs their values b_v",
        "null_gradient": "a null token's q, k, v receive gradient like any other token's",
        "zero_transcendental": "sigma and log n evaluate exp and log",
    },
)
def sigmoid_attn(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """Multi-head sigmoid attention: sigma(q k^T / sqrt(dh) - log n) v per head, then wo."""
    return attend(xp, x, mask, sigmoid_weights, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)
