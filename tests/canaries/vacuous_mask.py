"""Canary (vacuous queries): mask respect at one token has no (i, j) pair to check.

The operator ignores its mask (a token-mixing mean over every token), so mask respect
is false at n >= 2; at n = 1 no enumerated case exists, and "nothing checked" must read
"vacuous", never "proved".
"""
from __future__ import annotations

from tokenlaw.operators import arguments
from tokenlaw.operators.registry import Domain, declare

REASON = "ignores the mask; at n = 1 the law has no instance (vacuous), at n = 2 it is false"


@declare(name="canary_vacuous_mask", domain=Domain(params=lambda gen, d, dtype=None: {}, mask="random",
                                                  d_model=(2,), n_max=3),
         traits={"token_mixing", "masked"}, claims={"mask_respect": "(wrong) the mask is ignored"})
def canary_vacuous_mask(xp, x, mask=None):
    arguments.tokens(x)
    arguments.mask(mask, x)
    return xp.mean(x, axis=1, keepdims=True) + xp.zeros_like(x)
