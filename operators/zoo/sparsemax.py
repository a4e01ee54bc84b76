"""sparsemax: the Euclidean projection of each score row onto the simplex (Martins & Astudillo 2016).

    W_i = argmin_{p in simplex over the visible keys} |p - s_i|^2,   W_ij = (s_ij - tau_i)_+ m_ij

tau_i is the root of sum_j m_ij (s_ij - tau_i)_+ = 1.  The support is found
without a threshold search (operators/support.py: key j is in it iff the keys
above it exceed it by less than 1 in total), then tau_i = (sum_{j in S} s_ij - 1) / |S|.
Everything is taken relative to the row's largest visible score and at half
scale (s/2 - top/2 rounds like s - top, and is finite wherever s is: float16
holds scores to 65504 but not their differences to 131008); only the
threshold 1 halves with it.  A row that sees no key has weights 0 (declared:
masked_row = 0).  No exp or log: the map is piecewise linear.
"""
from __future__ import annotations

from .. import limits, projections, zoo_references
from ..external import External
from ..registry import Domain, declare
from ..score_attention import attend, row_top, visible
from ..support import inside as inside_support


def sparsemax_weights(xp, s, mask=None):
    """W_tj = m_tj (s_tj - tau_t)_+ with sum_j W_tj = 1 on every row that sees a key, 0 on one that sees none."""
    m = visible(xp, s, mask)
    active = xp.gt(m, 0)
    zero, one = xp.zeros_like(s), xp.ones_like(s)
    h = xp.where(active, s * 0.5 - row_top(xp, s, m) * 0.5, zero)      # (s - top) / 2 <= 0 on visible keys
    inside = inside_support(xp, h, m, 1, 0.5)                            # excess of s below 1
    size = xp.sum(xp.where(inside, one, zero), axis=-1, keepdims=True)
    total = xp.sum(xp.where(inside, h, zero), axis=-1, keepdims=True)
    half_tau = xp.div(total - 0.5, xp.where(xp.gt(size, 0), size, xp.ones_like(size)))
    return xp.where(active, xp.relu(h - half_tau), zero) * 2.0


_SIMPLEX_RULE = "the weights are (s - tau)_+ with tau chosen so that a row that sees a key sums to 1"


@declare(
    name="sparsemax",
    domain=Domain(params=projections.attention_params, mask="random", limits=limits.SOFTMAX_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=sparsemax_weights,
    reference=zoo_references.sparsemax_reference,
    masked_row=0.0,
    external=External("entmax", "sparsemax", "pip install entmax==1.3, or pip install 'tokenlaw[zoo]'"),
    claims={
        "simplex": _SIMPLEX_RULE,
        "sub_simplex": _SIMPLEX_RULE + "; a row that sees none is 0",
        "score_shift_invariance": "(s + c) - (tau + c) = s - tau: the threshold moves with the row",
        "mask_respect": "a masked key is outside every sum and gets weight 0",
        "permutation_equivariance": "no position terms: the support test is symmetric in the keys",
        "masked_row": "no visible key: every weight is m_ij (...)_+ = 0, so the output is 0",
        "finite": "every intermediate is bounded by the row's score range; the support has a member",
        "zero_transcendental": "piecewise linear: comparisons, sums and one division",
        "package_agreement": "the same projection as entmax.sparsemax, computed without a sort",
        "gradcheck": "piecewise linear; random points avoid the support's kinks",
    },
    violates={
        "null_receiver": "a null query still gets a distribution over the values",
        "null_source_insertion": "a null key with a high enough score enters the support and takes mass",
        "empty_support": "a row that sees only null tokens puts mass 1 on their values b_v",
        "silence": "every row that sees a key has mass 1, however low its scores",
        "null_gradient": "a null token's q, k, v receive gradient like any other token's",
    },
)
def sparsemax(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """Multi-head sparsemax attention: sparsemax(q k^T / sqrt(dh)) v per head, then wo."""
    return attend(xp, x, mask, sparsemax_weights, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)
