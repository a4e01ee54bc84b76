"""Canary (drawn weights): zero absorption holds for the drawn weights only.

f(x) = relu(w) x + relu(-w): f(0) = relu(-w) is 0 for the drawn w > 0 and not for w < 0.
A proof with the weights fixed to the drawn sample must read "holds for sampled weights",
never "proved"; with symbolic weights it is refuted (w < 0).
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

REASON = "f(0) = relu(-w) is 0 only for the drawn (positive) weights"


def params(gen, d_model, dtype=torch.float64):
    return {"w": (torch.rand(d_model, generator=gen, dtype=torch.float64) + 0.5).to(dtype)}


@declare(name="canary_drawn_weights", domain=Domain(params=params, d_model=(2,), n_max=3),
         traits={"token_local"}, claims={"zero_absorption": "(wrong for w < 0) relu(-w) = 0"})
def canary_drawn_weights(xp, x, *, w):
    arguments.tokens(x)
    arguments.weight(w, (x.shape[-1],), "w")
    return xp.relu(w) * x + xp.relu(xp.zeros_like(w) - w)
