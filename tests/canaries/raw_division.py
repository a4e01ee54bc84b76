"""Canary (raw `/`): presence-weighted pooling divided with Python `/` instead of xp.div.

out_i = p_i * (sum_j p_j h_j / sum_j p_j).  z3's own division is total (x/0 is some
number), so 0 * (0/0) "is" 0 and empty support / null receiver would be "proved", while
the eager code returns NaN for an all-null input.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.presence import presence
from tokenlaw.operators.registry import Domain, declare

# tau > 0 is part of the declared domain where Domain declares parameter domains (issue 11, point 3);
# until then the prover derives it from arguments.positive below
DECLARED = {"positive": ("tau",)} if "positive" in Domain.__dataclass_fields__ else {}

REASON = "Python / divides 0 by 0 on an all-null input: eager NaN, z3 total division says 0"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(name="canary_raw_division", domain=Domain(params=params, d_model=(2,), n_max=3, **DECLARED),
         traits={"token_mixing"},
         claims={"empty_support": "(wrong) every source null => 0",
                 "null_receiver": "(wrong) p_i = 0 gates the output"})
def canary_raw_division(xp, x, *, tau):
    arguments.tokens(x)
    arguments.positive(tau, "tau")
    p = presence(xp, x, tau=tau)
    num = xp.sum(p * x, axis=1, keepdims=True)
    den = xp.sum(p, axis=1, keepdims=True)
    return p * (num / den)
