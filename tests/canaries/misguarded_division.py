"""Canary (where guard the wrong way round): the division is selected exactly where den = 0 can occur.

out_i = p_i * where(den > 0, 0, xp.div(num, den)): an all-null input selects 0 / 0 = NaN.
The guarded-obligation rule must keep den != 0 where the division *is* selected (not den > 0).
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.presence import presence
from tokenlaw.operators.registry import Domain, declare

# tau > 0 is part of the declared domain where Domain declares parameter domains (issue 11, point 3);
# until then the prover derives it from arguments.positive below
DECLARED = {"positive": ("tau",)} if "positive" in Domain.__dataclass_fields__ else {}

REASON = "where() selects the division exactly when den <= 0: an all-null input gives 0 / 0 = NaN"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(name="canary_misguarded_division", domain=Domain(params=params, d_model=(2,), n_max=3, **DECLARED),
         traits={"token_mixing"}, claims={"empty_support": "(wrong) the guard is inverted"})
def canary_misguarded_division(xp, x, *, tau):
    arguments.tokens(x)
    arguments.positive(tau, "tau")
    p = presence(xp, x, tau=tau)
    num = xp.sum(p * x, axis=1, keepdims=True)
    den = xp.sum(p, axis=1, keepdims=True)
    return p * xp.where(xp.gt(den, 0), xp.zeros_like(num), xp.div(num, den))
