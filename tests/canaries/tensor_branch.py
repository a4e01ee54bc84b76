"""Canary (type branch): a token-local O-map whose gate is 1 when `isinstance(x, torch.Tensor)`.

Traced through the z3 namespace, x is a numpy object array, so the trace takes the gated
path and f(0) = rho(0) * (0 + b) = 0 is proved; eagerly x is a tensor, the gate is 1 and
f(0) = b != 0.  The symbolic tier must see that the trace ran other lines than the eager code.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.presence import presence
from tokenlaw.operators.registry import Domain, declare

REASON = "gated by presence only when traced: eagerly (x a tensor) the gate is 1 and f(0) = b"


def params(gen, d_model, dtype=torch.float64):
    return {"b": torch.randn(d_model, generator=gen, dtype=torch.float64).to(dtype),
            "tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(name="canary_tensor_branch", domain=Domain(params=params, positive=("tau",)), traits={"token_local"},
         claims={"zero_absorption": "(wrong eagerly) rho(0) = 0 gates the biased update"})
def canary_tensor_branch(xp, x, *, b, tau):
    arguments.tokens(x)
    gate = presence(xp, x, tau=tau)
    if isinstance(x, torch.Tensor):
        gate = xp.ones_like(gate)
    return gate * (x + b)
