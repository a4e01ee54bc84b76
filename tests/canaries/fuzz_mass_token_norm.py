"""Canary (class 3, token norms): softmax attention whose row i is scaled by min(1, |x_i|^2).

The probe that reads the applied weights has tokens of norm >= 1, where the factor is 1: only the
operator's real rows (the case's own tokens, |x_i| < 1 for many) show row masses below 1.
"""
from tokenlaw.operators import arguments, limits, normalisers, projections
from tokenlaw.operators.registry import Domain, Registry, declare
from tokenlaw.properties.catalogue import collect

REASON = "row mass min(1, |x_i|^2): 1 on the probe's tokens (norm >= 1), 0.15-0.99 on ordinary tokens"
OPERATOR = "canary_mass_token_norm"
CAUGHT_BY = ("simplex",)


def softmax_weights(xp, s, mask=None):
    return normalisers.softmax(xp, s, mask)


@declare(name=OPERATOR, domain=Domain(params=projections.attention_params, mask="random",
                                      limits=limits.SOFTMAX_SCORES),
         traits={"token_mixing", "masked", "score_normaliser"}, weights=softmax_weights,
         claims={"simplex": "(wrong) softmax rows, but scaled by min(1, |x_i|^2)"})
def canary_mass_token_norm(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """softmax(q k^T / sqrt(dh)) v with row i scaled by min(1, |x_i|^2), then wo."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    w = softmax_weights(xp, projections.scores(xp, q, k), projections.head_mask(mask))
    r = xp.sum(x * x, axis=-1, keepdims=True)[:, None]                # (B, 1, N, 1): |x_i|^2 per query
    g = xp.where(xp.gt(r, xp.ones_like(r)), xp.ones_like(r), r)
    return projections.output(xp, xp.matmul(w * g, v), wo)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
