"""Canary (domain by error message): rejects only tau = 0, wrong at tau = -1, declared on all reals.

The old prover guessed "tau > 0" from the error at tau = 0 and proved zero
absorption; with the domain declared as every real, tau = -1 is in it and
both tiers must find f(0) = relu(-tau) != 0 there.
"""
from __future__ import annotations

import numbers

import torch

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.registry import Domain, declare

REASON = "rejects only tau = 0 yet is wrong at tau = -1; declared on all reals, so tau = -1 is in its domain"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(-2.0, 2.0, generator=gen))}


@declare(name="domain_rejects_zero_reals", domain=Domain(params=params, reals=("tau",)),
         traits={"token_local"}, claims={"zero_absorption": "wrongly claimed: f(0) = relu(-tau) for tau < 0"})
def domain_rejects_zero_reals(xp, x, *, tau):
    """x + relu(-tau): correct for tau >= 0 only."""
    if isinstance(tau, numbers.Real) and tau == 0:
        raise InvalidArgument(f"tau: must be != 0, got {tau}")
    return x + xp.relu(xp.zeros_like(x) - tau)
