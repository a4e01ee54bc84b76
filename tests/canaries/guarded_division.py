"""Control for the raw-division canary: the same pooling, divided correctly under a where guard.

out_i = p_i * where(den > 0, xp.div(num, den), 0): an all-null input gives 0, not NaN.  The
division's obligation den != 0 is needed only where its value is selected (den > 0), so
the symbolic tier must prove empty support and null receiver here, not flag a MISMATCH.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.presence import presence
from tokenlaw.operators.registry import Domain, declare

# tau > 0 is part of the declared domain where Domain declares parameter domains (issue 11, point 3);
# until then the prover derives it from arguments.positive below
DECLARED = {"positive": ("tau",)} if "positive" in Domain.__dataclass_fields__ else {}

REASON = "control (correct): the division is guarded by where(den > 0, ., 0); proved is the right verdict"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(name="control_guarded_division", domain=Domain(params=params, d_model=(2,), n_max=3, **DECLARED),
         traits={"token_mixing"},
         claims={"empty_support": "an all-null input selects the 0 branch",
                 "null_receiver": "p_i = 0 gates the output"})
def control_guarded_division(xp, x, *, tau):
    arguments.tokens(x)
    arguments.positive(tau, "tau")
    p = presence(xp, x, tau=tau)
    num = xp.sum(p * x, axis=1, keepdims=True)
    den = xp.sum(p, axis=1, keepdims=True)
    return p * xp.where(xp.gt(den, 0), xp.div(num, den), xp.zeros_like(num))
