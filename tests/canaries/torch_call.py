"""Canary (torch.* call): the operator calls torch.relu directly instead of xp.relu.

Correct eagerly (relu(0) = 0), but the symbolic namespaces cannot follow a torch call:
the cell must say "not traceable" at this line, and the rest of the run must go on.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

REASON = "calls torch.relu on the traced value: no symbolic model, must be reported, never proved"


@declare(name="canary_torch_call", domain=Domain(params=lambda gen, d, dtype=None: {}, d_model=(2,), n_max=3),
         traits={"token_local"}, claims={"zero_absorption": "relu(0) = 0"})
def canary_torch_call(xp, x):
    arguments.tokens(x)
    return torch.relu(x)
