"""entmax-1.5: the alpha = 1.5 member of the entmax family (Peters, Niculae & Martins 2019).

    W_ij = m_ij ((s_ij / 2) - tau_i)_+^2,   tau_i the root of sum_j m_ij ((s_ij / 2) - tau_i)_+^2 = 1

Exact, not bisected: with z = s / 2, key j is in the support iff the keys
above it give sum_l (z_l - z_j)_+^2 < 1 (operators/support.py), and on that
support S (|S| = K) the threshold solves the quadratic
K tau^2 - 2 tau sum z + sum z^2 - 1 = 0 at its smaller root:

    tau = mean_S z - sqrt(delta),   delta = (1 - sum_S (z - mean_S z)^2) / K  (> 0 on the true support)

So the map is exact in the reals and its only error is rounding: a handful
of sums, squares, one division and one square root of values bounded by the
row's range (taken relative to the row's largest visible score, so nothing
overflows), which the differential and spec_reference contracts bound with
the project's one tolerance model.  A key within rounding distance of the
threshold may change sides; its weight (z - tau)^2 is then itself of the
order of that rounding squared, so the map stays continuous through it.
A row that sees no key has weights 0
(declared: masked_row = 0).  No exp or log: a square root is algebraic.
"""
from __future__ import annotations

from .. import limits, projections, zoo_references
from ..external import External
from ..registry import Domain, declare
from ..score_attention import attend, row_top, visible
from ..support import inside as inside_support


def entmax15_weights(xp, s, mask=None):
    """W_tj = m_tj (s_tj / 2 - tau_t)_+^2 with sum_j W_tj = 1 on every row that sees a key, 0 on one that sees none."""
    m = visible(xp, s, mask)
    active = xp.gt(m, 0)
    zero, one = xp.zeros_like(s), xp.ones_like(s)
    z = xp.where(active, s * 0.5 - row_top(xp, s, m) * 0.5, zero)      # s / 2 - top / 2 <= 0 on visible keys
    inside = inside_support(xp, z, m, 2, 1.0)
    size = xp.sum(xp.where(inside, one, zero), axis=-1, keepdims=True)
    count = xp.where(xp.gt(size, 0), size, xp.ones_like(size))
    mean = xp.div(xp.sum(xp.where(inside, z, zero), axis=-1, keepdims=True), count)
    spread = xp.where(inside, z - mean, zero)
    delta = xp.div(1.0 - xp.sum(spread * spread, axis=-1, keepdims=True), count)
    tau = mean - xp.sqrt(xp.relu(delta))          # relu: delta > 0 in the reals; rounding may not keep it so
    r = xp.where(active, xp.relu(z - tau), zero)
    return r * r


_SIMPLEX_RULE = "the weights are (s/2 - tau)_+^2 with tau chosen so that a row that sees a key sums to 1"


@declare(
    name="entmax15",
    domain=Domain(params=projections.attention_params, mask="random", limits=limits.SOFTMAX_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=entmax15_weights,
    reference=zoo_references.entmax15_reference,
    masked_row=0.0,
    external=External("entmax", "entmax15", "pip install entmax==1.3, or pip install 'tokenlaw[zoo]'"),
    claims={
        "simplex": _SIMPLEX_RULE,
        "sub_simplex": _SIMPLEX_RULE + "; a row that sees none is 0",
        "score_shift_invariance": "(s + c)/2 - (tau + c/2) = s/2 - tau: the threshold moves with the row",
        "mask_respect": "a masked key is outside every sum and gets weight 0",
        "permutation_equivariance": "no position terms: the support test is symmetric in the keys",
        "masked_row": "no visible key: every weight is m_ij (...)_+^2 = 0, so the output is 0",
        "finite": "every intermediate is bounded by the row's score range; delta > 0 on the support",
        "zero_transcendental": "comparisons, sums, one division and one square root (algebraic)",
        "package_agreement": "the same map as entmax.entmax15 (its exact sort-based threshold), computed without "
                             "a sort",
        "gradcheck": "smooth between support changes; random points avoid them",
    },
    violates={
        "null_receiver": "a null query still gets a distribution over the values",
        "null_source_insertion": "a null key with a high enough score enters the support and takes mass",
        "empty_support": "a row that sees only null tokens puts mass 1 on their values b_v",
        "silence": "every row that sees a key has mass 1, however low its scores",
        "null_gradient": "a null token's q, k, v receive gradient like any other token's",
    },
)
def entmax15(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """Multi-head entmax-1.5 attention: entmax15(q k^T / sqrt(dh)) v per head, then wo."""
    return attend(xp, x, mask, entmax15_weights, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)
