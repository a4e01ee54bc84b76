"""Canary (fully masked rows, float64): a host 1 % too large only when some query sees no key, in float64.

The standing adversary's survivors (issue 43): at seed 0 no spec_reference cell of the softmax hosts drew
a fully masked row in its search (Hypothesis draws the last mask kind rarely), so a host wrong only there
held everywhere.  Every cell of a masked operator now draws the explicit edge ``empty_row`` (n >= 2), where
a depth-1 host keeps its other rows finite and its reference judges them.
"""
from ._build import edited

REASON = "wrong only on float64 inputs whose mask leaves some query with no key: the host's output scaled by 1.01"
OPERATOR = "standard_host_l1"
CAUGHT_BY = ("spec_reference",)
LINE = "        return layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]\n"
WRONG = ("        out = layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]\n"
         "        empty = mask is not None and bool((mask.sum(-1) == 0).any())\n"
         "        return out * 1.01 if empty and x.dtype == torch.float64 else out\n")

registry = edited("hosts", (LINE, WRONG))
