"""Canary (Python branch): `if tau == 0:` on a traced value.

On a z3 term `tau == 0` is decided structurally (False), so the branch is never traced
and zero absorption would be "proved"; eagerly f(0) = 1 at tau = 0, which the domain draws.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

# tau >= 0 (0 included) is the declared domain where Domain declares parameter domains (issue 11, point 3)
DECLARED = {"nonnegative": ("tau",)} if "nonnegative" in Domain.__dataclass_fields__ else {}

REASON = "f(0) = 1 at tau = 0 through a Python if the symbolic trace never takes"


def params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.randint(0, 2, (), generator=gen))}     # 0 or 1, both in the domain


@declare(name="canary_python_branch", domain=Domain(params=params, d_model=(2,), n_max=3, **DECLARED),
         traits={"token_local"}, claims={"zero_absorption": "(wrong) tau * x is 0 at x = 0"})
def canary_python_branch(xp, x, *, tau):
    arguments.tokens(x)
    if tau == 0:
        return xp.ones_like(x)
    return tau * x
