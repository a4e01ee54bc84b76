"""Canary (causal, off by one): causal softmax attention whose mask lets each query see one token ahead.

The user's bug of issue 47: ``tril(ones, k=1)`` for ``tril(ones)``.  Every n >= 2 violates causality, so the
shrunk counterexample must be n = 2 (two tokens: the first sees the second), whatever n the search drew first.
"""
from tokenlaw.operators import arguments, limits, normalisers, projections
from tokenlaw.operators.registry import Domain, Registry, declare
from tokenlaw.properties.catalogue import collect

REASON = "declared causal, its mask is tril(k=1): every query sees the next token"
OPERATOR = "canary_fuzz_look_ahead_one"
CAUGHT_BY = ("causality",)
MINIMAL_N = 2          # the smallest length that shows the bug (tests/fuzz/test_shrink.py)


@declare(name=OPERATOR, domain=Domain(params=projections.attention_params, limits=limits.SOFTMAX_SCORES),
         traits={"token_mixing", "causal"},
         claims={"causality": "a lower-triangular mask (but see REASON)"})
def canary_fuzz_look_ahead_one(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """softmax(q k^T / sqrt(dh)) v over the keys j <= i + 1 (the bug: j <= i), then wo."""
    arguments.tokens(x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    s = projections.scores(xp, q, k)
    mask = xp.tril(xp.ones_like(s), 1)
    return projections.output(xp, xp.matmul(normalisers.softmax(xp, s, mask), v), wo)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
