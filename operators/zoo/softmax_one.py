"""softmax_one ("attention is off by one", Miller 2023): softmax with a 1 in the denominator.

    W_ij = m_ij exp(s_ij) / (1 + sum_j m_ij exp(s_ij))

Stabilised like OAttention's eps_den (docs/mathematics.md#oattention): with
M_i the row's largest visible score and at least 0 (= log 1), numerator and
denominator are multiplied by exp(-M_i), so the 1 enters as exp(0 - M_i) <= 1
and the largest denominator term is exactly 1: nothing overflows and the
denominator is never below 1.  The 1 lets a row keep mass back (it is
softmax over the keys plus an implicit key of score 0 and value 0), so the
mass is below 1 and depends on the row's level: no simplex, no shift
invariance.  A row that sees no key is 0 / 1 = 0 (declared: masked_row = 0).
"""
from __future__ import annotations

from .. import limits, projections, zoo_references
from ..registry import Domain, declare
from ..score_attention import attend, visible


def softmax_one_weights(xp, s, mask=None):
    """W_tj = m_tj exp(s_tj - M_t) / (exp(-M_t) + sum_j m_tj exp(s_tj - M_t)), M_t = max(max_j s_tj, 0)."""
    m = visible(xp, s, mask)
    active = xp.gt(m, 0)
    # inactive entries stand in as 0 (= log 1), never as a score: a row that sees nothing then has
    # M = 0 and denominator exactly 1 (its smallest score, the usual stand-in, may be large and positive)
    top = xp.maximum(xp.max(xp.where(active, s, xp.zeros_like(s)), axis=-1, keepdims=True), 0.0)
    e = xp.where(active, xp.exp(xp.where(active, s - top, xp.zeros_like(s))), xp.zeros_like(s))
    return xp.div(e, xp.exp(-top) + xp.sum(e, axis=-1, keepdims=True))


@declare(
    name="softmax_one",
    domain=Domain(params=projections.attention_params, mask="random", limits=limits.FLOAT16_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=softmax_one_weights,
    reference=zoo_references.softmax_one_reference,
    masked_row=0.0,
    claims={
        "sub_simplex": "exp(s) / (1 + sum exp(s)): positive weights whose mass is below 1",
        "mask_respect": "a masked key gets weight m_ij exp(...) = 0 and adds nothing to the denominator",
        "permutation_equivariance": "no position terms",
        "masked_row": "no visible key: 0 / (1 + 0) = 0",
        "finite": "the largest denominator term is exactly 1 after the shift by M >= 0",
        "gradcheck": "smooth in its inputs",
    },
    violates={
        "simplex": "the 1 in the denominator keeps mass 1 / (1 + sum exp(s)) back",
        "score_shift_invariance": "exp(s + c) / (1 + sum exp(s + c)) moves with c: the 1 does not scale",
        "silence": "scores <= 0 still give weights exp(s) / (1 + sum exp(s)) > 0",
        "null_receiver": "a null query still gets a weighted sum of the values",
        "null_source_insertion": "a null key adds exp(s_ij) to every denominator it is visible in",
        "empty_support": "a row that sees only null tokens weighs their values b_v",
        "null_gradient": "a null token's q, k, v receive gradient like any other token's",
        "zero_transcendental": "it evaluates exp",
    },
)
def softmax_one(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """Multi-head softmax_one attention: exp(s) / (1 + sum exp(s)) per head, then wo."""
    return attend(xp, x, mask, softmax_one_weights, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)
