"""Canary (domain wider than the code): declared on every real tau, the code rejects tau < 0.

f(x) = x + relu(-tau) absorbs zero exactly when tau >= 0.  The declaration says tau may be any
real, so z3 finds the counterexample tau < 0; replayed on the eager code, its validation raises
InvalidArgument for that tau.  That is no untraceable code: the declared domain is wider than
the code accepts (domain_mismatch, naming tau and its value).
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.registry import Domain, declare

REASON = "declared reals=('tau',) but the code raises InvalidArgument for tau < 0, where the claim fails"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(name="canary_domain_rejects_negative", domain=Domain(params=params, reals=("tau",)),
         traits={"token_local"}, claims={"zero_absorption": "(wrong for tau < 0) relu(-tau) = 0"})
def canary_domain_rejects_negative(xp, x, *, tau):
    arguments.tokens(x)
    value = arguments.scalar_value(tau, "tau")          # None on a traced tau: the solver's business
    if value is not None and value < 0:
        raise InvalidArgument(f"tau: must be >= 0, got {value}")
    return x + xp.relu(xp.zeros_like(x) - tau)
