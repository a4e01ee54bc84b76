"""Canary (body != weights=): an SDPA that declares weights = 0.5 softmax but runs the full softmax.

Judged on the declaration, every row has mass 1/2 < 1, so "mass < 1 at
peaks <= 1" (gate_below_one) passed; the code that runs has mass exactly 1.
"""
from __future__ import annotations

from tokenlaw.operators import arguments, normalisers, projections
from tokenlaw.operators.registry import Domain, declare

REASON = "declares weights = 0.5 softmax (mass 1/2) while its body applies softmax (mass 1)"


def half_softmax(xp, s, mask=None):
    return 0.5 * normalisers.softmax(xp, s, mask)


@declare(name="weights_half_softmax", domain=Domain(params=projections.attention_params, mask="random"),
         traits={"token_mixing", "masked", "score_normaliser"}, weights=half_softmax,
         claims={"gate_below_one": "wrongly claimed: the declared weights have mass 1/2, the body's have 1"})
def weights_half_softmax(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """softmax(q k^T / sqrt(dh)) v, then wo."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    w = normalisers.softmax(xp, projections.scores(xp, q, k), projections.head_mask(mask))
    return projections.output(xp, xp.matmul(w, v), wo)
