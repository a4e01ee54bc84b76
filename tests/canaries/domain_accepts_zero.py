"""Canary (domain by error message): accepts tau = 0, rejects tau < 0, wrong near tau = 0.

The old prover saw no error at 0, so it put no premise on tau, z3 could pick a
negative tau, the replay raised and `tokenlaw prove` exited 2 with no report.
Declared tau >= 0, the counterexample must lie in [0, 1e-3) and replay.
"""
from __future__ import annotations

import numbers

import torch

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.registry import Domain, declare

REASON = "accepts tau = 0 but rejects tau < 0, and f(0) = relu(1 - 1000 tau) != 0 for 0 <= tau < 1e-3"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(name="domain_accepts_zero", domain=Domain(params=params, nonnegative=("tau",)),
         traits={"token_local"}, claims={"zero_absorption": "wrongly claimed: f(0) != 0 for tau < 1e-3"})
def domain_accepts_zero(xp, x, *, tau):
    """x + relu(1 - 1000 tau): wrong for 0 <= tau < 1e-3."""
    if isinstance(tau, numbers.Real) and tau < 0:
        raise InvalidArgument(f"tau: must be >= 0, got {tau}")
    return x + xp.relu(xp.ones_like(x) - 1000 * tau)
