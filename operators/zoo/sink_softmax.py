"""sink_softmax: softmax with a learned per-head sink logit b_h, as gpt-oss uses it.

    W_ij = m_ij exp(s_ij) / (exp(b_h) + sum_j m_ij exp(s_ij))

gpt-oss appends a column holding b_h to each head's scores, takes the
softmax over the N + 1 columns and drops the sink column; that is this
formula, written here without the column: with M_i the largest of the row's
visible scores and b_h, the sink enters as exp(b_h - M_i) <= 1 and the
largest denominator term is exactly 1.  b_h is a parameter, ``sinks``, of
shape (heads,) (Domain.roles.per_head).  The sink keeps mass back, so no
simplex and no score-shift invariance (shifting the scores but not b_h moves
the mass).  A row that sees no key gives all its mass to the sink: 0
(declared: masked_row = 0).
"""
from __future__ import annotations

import torch

from .. import arguments, limits, projections, zoo_references
from ..registry import Domain, declare
from ..roles import Roles
from ..score_attention import attend, visible


def sink_softmax_weights(xp, s, mask=None, *, sinks):
    """W_tj = m_tj exp(s_tj - M) / (exp(b_h - M) + sum_j m_tj exp(s_tj - M)), M = max(max_j s_tj, b_h)."""
    b = xp.reshape(sinks, (1, sinks.shape[0], 1, 1)) * xp.ones_like(s[..., :1])   # (B, H, N, 1)
    m = visible(xp, s, mask)
    active = xp.gt(m, 0)
    # inactive entries stand in as b_h, never as a score: a row that sees nothing has M = b_h and
    # denominator exactly 1 (its smallest score, the usual stand-in, may lie far above b_h)
    top = xp.maximum(xp.max(xp.where(active, s, b * xp.ones_like(s)), axis=-1, keepdims=True), b)
    e = xp.where(active, xp.exp(xp.where(active, s - top, xp.zeros_like(s))), xp.zeros_like(s))
    return xp.div(e, xp.exp(b - top) + xp.sum(e, axis=-1, keepdims=True))


def sink_params(gen, d_model, dtype=torch.float64, *, heads=None):
    p = projections.attention_params(gen, d_model, dtype, heads=heads)
    p["sinks"] = torch.randn(p["heads"], generator=gen, dtype=torch.float64).to(dtype)
    return p


def sink_errors(kw):
    """Bad calls beyond the generated ones: a sink per head of another head count."""
    yield arguments.ErrorInput("sinks-heads", lambda k: {**k, "sinks": k["sinks"][:1].repeat(k["heads"] + 1)},
                               "sinks")


@declare(
    name="sink_softmax",
    domain=Domain(params=sink_params, mask="random", limits=limits.FLOAT16_SCORES, roles=Roles(per_head=("sinks",))),
    traits={"token_mixing", "masked", "score_normaliser"},
    weights=sink_softmax_weights,
    reference=zoo_references.sink_softmax_reference,
    errors=sink_errors,
    masked_row=0.0,
    claims={
        "sub_simplex": "the appended sink column takes a positive share: the keys' mass is below 1",
        "mask_respect": "a masked key gets weight m_ij exp(...) = 0 and adds nothing to the denominator",
        "permutation_equivariance": "no position terms; the sink is per head, not per position",
        "masked_row": "no visible key: the sink takes all the mass, 0 / exp(b_h) = 0",
        "finite": "the largest denominator term is exactly 1 after the shift by M >= b_h",
        "gradcheck": "smooth in its inputs",
    },
    violates={
        "simplex": "the sink keeps exp(b_h) / (exp(b_h) + sum exp(s)) of the mass back",
        "score_shift_invariance": "shifting the scores but not b_h moves the sink's share",
        "silence": "scores <= 0 still give weights exp(s) / (exp(b_h) + sum exp(s)) > 0",
        "null_receiver": "a null query still gets a weighted sum of the values",
        "null_source_insertion": "a null key adds exp(s_ij) to every denominator it is visible in",
        "empty_support": "a row that sees only null tokens weighs their values b_v",
        "null_gradient": "a null token's q, k, v receive gradient like any other token's",
        "zero_transcendental": "it evaluates exp",
    },
)
def sink_softmax(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads, sinks):
    """Multi-head softmax attention with a learned sink logit per head (the sink column dropped), then wo."""
    arguments.tokens(x)
    arguments.heads(heads, x.shape[-1])
    arguments.weight(sinks, (heads,), "sinks", like=x)
    return attend(xp, x, mask, sink_softmax_weights, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads,
                  sinks=sinks)
