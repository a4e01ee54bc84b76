"""Canary (causal, mask=None): causal softmax attention that applies causality only together with a mask tensor.

Written with the xp primitives, so both tiers judge it: with any mask it is causal (mask AND j <= i);
called with mask=None it attends to every later token.
"""
import numpy as np

from tokenlaw.operators import arguments, limits, normalisers, projections
from tokenlaw.operators.registry import Domain, Registry, declare
from tokenlaw.properties.catalogue import collect

REASON = "declared causal, forgets causality only when mask is None"
OPERATOR = "canary_fuzz_unmasked_acausal"
CAUGHT_BY = ("unmasked",)


@declare(name=OPERATOR, domain=Domain(params=projections.attention_params, mask="random",
                                      limits=limits.SOFTMAX_SCORES),
         traits={"token_mixing", "masked", "causal"},
         claims={"mask_respect": "a masked key gets weight 0 (with a mask tensor it does)"})
def canary_fuzz_unmasked_acausal(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """softmax(q k^T / sqrt(dh)) v over the keys j <= i the mask leaves visible, then wo (but see REASON)."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    s = projections.scores(xp, q, k)
    n = x.shape[1]
    hm = None if mask is None else projections.head_mask(mask) * xp.asarray(np.tril(np.ones((n, n))), s)
    return projections.output(xp, xp.matmul(normalisers.softmax(xp, s, hm), v), wo)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
