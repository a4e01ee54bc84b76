"""Control for the domain canaries: the same body, declared tau > 0, where zero absorption is true.

Not a wrong operator: it shows that the declaration, not the error message,
decides the premise (proved / holds are the right verdicts here).
"""
from __future__ import annotations

import numbers

import torch

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.registry import Domain, declare

CONTROL = True
REASON = "control: rejects only tau = 0, declared tau > 0, on which f(0) = relu(-tau) = 0 is true"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(name="domain_rejects_zero_positive", domain=Domain(params=params, positive=("tau",)),
         traits={"token_local"}, claims={"zero_absorption": "f(0) = relu(-tau) = 0 for tau > 0"})
def domain_rejects_zero_positive(xp, x, *, tau):
    """x + relu(-tau): correct for tau >= 0."""
    if isinstance(tau, numbers.Real) and tau == 0:
        raise InvalidArgument(f"tau: must be != 0, got {tau}")
    return x + xp.relu(xp.zeros_like(x) - tau)
