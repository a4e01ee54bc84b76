"""Canary (class 3, n > d): softmax attention that takes another path -- 0.9 softmax -- when n > d.

The probe that reads the applied weights is at least 2n wide, so it never takes that path; a long
sequence in a narrow head (the ordinary case) does, with row mass 0.9.
"""
from tokenlaw.operators import arguments, limits, normalisers, projections
from tokenlaw.operators.registry import Domain, Registry, declare
from tokenlaw.properties.catalogue import collect

REASON = "row mass 0.9 when n > d (a long sequence in a narrow head), 1 on the probe (width >= 2n)"
OPERATOR = "canary_mass_long_narrow"
CAUGHT_BY = ("simplex",)


def softmax_weights(xp, s, mask=None):
    return normalisers.softmax(xp, s, mask)


@declare(name=OPERATOR, domain=Domain(params=projections.attention_params, mask="random",
                                      limits=limits.SOFTMAX_SCORES),
         traits={"token_mixing", "masked", "score_normaliser"}, weights=softmax_weights,
         claims={"simplex": "(wrong) softmax rows, but 0.9 softmax when n > d"})
def canary_mass_long_narrow(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """softmax(q k^T / sqrt(dh)) v, then wo; 0.9 times the weights when n > d."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    w = softmax_weights(xp, projections.scores(xp, q, k), projections.head_mask(mask))
    if x.shape[1] > x.shape[2]:
        w = w * 0.9
    return projections.output(xp, xp.matmul(w, v), wo)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
