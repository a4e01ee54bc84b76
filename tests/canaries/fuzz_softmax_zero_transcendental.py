"""Canary: softmax attention that calls torch.softmax directly (bypassing xp) yet claims zero_transcendental."""
import torch

from tokenlaw.operators import projections
from tokenlaw.operators.registry import Domain, Registry, declare
from tokenlaw.properties.catalogue import collect

REASON = "torch.softmax evaluates exp even though no xp.exp call is traced"
OPERATOR = "canary_softmax_zero_transcendental"
CAUGHT_BY = ("zero_transcendental",)


@declare(name=OPERATOR, domain=Domain(params=projections.attention_params), traits={"token_mixing"},
         claims={"zero_transcendental": "(wrong) the body calls no xp.exp"})
def softmax_direct(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads):
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    return projections.output(xp, xp.matmul(torch.softmax(projections.scores(xp, q, k), dim=-1), v), wo)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
