"""SDPA: standard softmax attention, the baseline that fails the null contracts (docs/mathematics.md#sdpa)."""
from __future__ import annotations

from . import arguments, limits, normalisers, projections, references
from .registry import Domain, declare


def sdpa_weights(xp, s, mask=None):
    return normalisers.softmax(xp, s, mask)


@declare(
    name="sdpa",
    domain=Domain(params=projections.attention_params, mask="random", limits=limits.SOFTMAX_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=sdpa_weights,
    reference=references.sdpa_reference,
    claims={
        "mask_respect": "a masked key gets weight m_ij exp(s_ij) = 0",
        "permutation_equivariance": "no position terms: permuting tokens permutes outputs",
        "score_shift_invariance": "exp(s + c) / sum exp(s + c) = exp(s) / sum exp(s)",
        "simplex": "softmax weights are positive and sum to one",
        "gradcheck": "smooth in its inputs",
    },
    violates={
        "null_receiver": "a null query still gets a convex combination of the values",
        "null_source_insertion": "a null key adds exp(s_ij) mass to every denominator",
        "empty_support": "a fully masked row is 0/0 = NaN",
        "finite": "a fully masked row is 0/0 = NaN, in every dtype",
        "null_gradient": "a null token's q, k, v receive gradient like any other token",
        "zero_transcendental": "softmax evaluates exp",
    },
)
def sdpa(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """Multi-head softmax attention: softmax(q k^T / sqrt(dh)) v, then wo."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    hm = projections.head_mask(mask)
    w = sdpa_weights(xp, projections.scores(xp, q, k), hm)
    if mask is None:
        return projections.output(xp, xp.matmul(w, v), wo)
    # A fully masked row's weights are 0/0 = NaN (declared).  That NaN must reach
    # its own output row only, but CPU bfloat16 GEMM does not keep rows apart:
    # (17 x 17 with a NaN in row 1) @ (17 x 34) gives NaN in row 0 too (ATen's
    # bfloat16 matmul at 16k+1 rows, AVX2 path; float16/float32 do not).  So the
    # matmuls see 0 for such a row, and its 0/0 is put back after them as the
    # exact row factor c / c (c = the row's visible count): 1 for a row that sees
    # something (x * 1 = x, so those rows are bit-identical), 0/0 = NaN for one
    # that sees nothing.
    seen = xp.gt(xp.sum(hm * xp.ones_like(w), axis=-1, keepdims=True) * xp.ones_like(w), 0)
    o = projections.output(xp, xp.matmul(xp.where(seen, w, xp.zeros_like(w)), v), wo)
    count = xp.sum(mask * xp.ones_like(mask), axis=-1, keepdims=True)
    return o * xp.div(count, count)
