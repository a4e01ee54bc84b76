"""Canary (Limit.predicate): a broken operator whose declared limit sets aside every draw.

``Limit(predicate=...)`` (issue 47) lets an operator say where a dtype cannot hold its computation; an
example outside is set aside unjudged, and counted.  A predicate that refuses every example would hide
any bug; the row must then read vacuous (too few examples judged), never holds.
"""
import torch

from tokenlaw.operators.registry import Domain, Limit, Registry, declare
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect

REASON = "f(x) = x + 1 claims zero absorption, and its limit's predicate refuses every drawn example"
OPERATOR = "canary_limit_hides_everything"
CAUGHT_BY = ("zero_absorption",)
OUTCOME = V.Outcome.VACUOUS


def refuses_everything(x, params) -> bool:
    return False


@declare(name=OPERATOR, domain=Domain(params=lambda g, d, dt=torch.float64: {}, dtypes=("float64",),
                                      limits={"float64": Limit(predicate=refuses_everything,
                                                               reason="a limit that sets aside every draw")}),
         traits={"token_local"}, claims={"zero_absorption": "claimed, wrongly (but see REASON)"})
def canary_limit_hides_everything(xp, x):
    """x + 1 (f(0) = 1)."""
    return x + 1.0


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
