"""rela: rectified linear attention with its output RMS-normalised (ReLA, Zhang, Titov & Sennrich 2021).

    a_ij = m_ij relu(s_ij)                                    (no normalisation over the row)
    o_i  = sum_j a_ij v_j                                     per head, (d_h,)
    o'_i = o_i / sqrt(mean_k o_ik^2 + eps)                    RMSNorm over each head's d_h features
    out  = (g * merge_heads(o')) W_o                          g: the RMSNorm gain, (d_model,)

This is ReLA's plain form (the paper's RMSNorm variant, without its gated
one): the scores are rectified instead of normalised, and the output of each
head is normalised instead, which keeps its scale in check.  A head whose
scores are all <= 0 has a = 0, o = 0 and o' = 0 / sqrt(eps) = 0: it switches
off, exactly.  The gain g is drawn positive (1 plus a small spread); eps > 0
is a parameter.  The row map the code applies (what the score laws read off
the output) is the rectification followed by the normalisation: not a
distribution.  A row that sees no key is 0 (declared: masked_row = 0).  No
exp or log: relu, a square root and a division.
"""
from __future__ import annotations

import torch

from . import arguments, limits, projections, zoo_references
from .registry import Domain, declare
from .score_attention import visible


def rela_weights(xp, s, mask=None):
    """a_tj = m_tj relu(s_tj): the rectified scores, before the output's RMS normalisation."""
    return xp.where(xp.gt(visible(xp, s, mask), 0), xp.relu(s), xp.zeros_like(s))


def rms_normalise(xp, o, eps):
    """o / sqrt(mean(o^2) + eps) over the last axis (each head's features)."""
    return xp.div(o, xp.sqrt(xp.mean(o * o, axis=-1, keepdims=True) + eps))


def rela_params(gen, d_model, dtype=torch.float64, *, heads=None):
    p = projections.attention_params(gen, d_model, dtype, heads=heads)
    p["gain"] = (1.0 + 0.1 * torch.randn(d_model, generator=gen, dtype=torch.float64)).abs().to(dtype)
    p["eps"] = float(10 ** torch.empty(()).uniform_(-6, -2, generator=gen))
    return p


@declare(
    name="rela",
    domain=Domain(params=rela_params, mask="random", positive=("eps",), limits=limits.FLOAT16_SCORES),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=rela_weights,
    reference=zoo_references.rela_reference,
    masked_row=0.0,
    claims={
        "silence": "no positive score: relu gives a = 0, so o = 0 and o / sqrt(0 + eps) = 0",
        "mask_respect": "a masked key gets a_ij = 0",
        "permutation_equivariance": "no position terms",
        "masked_row": "no visible key: a = 0, o = 0, normalised 0",
        "finite": "the RMS denominator is at least sqrt(eps) > 0",
        "zero_transcendental": "relu, a mean of squares, a square root and a division",
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
def rela(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads, gain, eps):
    """Multi-head ReLA: RMSNorm(relu(q k^T / sqrt(dh)) v) per head, the gain, then wo."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    d = x.shape[-1]
    arguments.weight(gain, (d,), "gain", like=x)
    arguments.weight(wo, (d, d), "wo", like=x)
    arguments.positive(eps, "eps")
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    a = rela_weights(xp, projections.scores(xp, q, k), projections.head_mask(mask))
    o = rms_normalise(xp, xp.matmul(a, v), eps)
    return xp.matmul(projections.merge_heads(xp, o) * gain, wo)
