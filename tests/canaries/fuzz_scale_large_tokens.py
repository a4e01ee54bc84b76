"""Canary (magnitude decade): LayerNorm 1 % too large once some token entry exceeds 1e3.

The drawn token scales stop at 100 (strategies.MAGNITUDES), so max |x| > 1e3 was never drawn (issue
43's standing adversary); the explicit edge ``magnitude`` draws the token scale 1e3 wherever the
operator's declared limit allows it.
"""
from ._build import edited

REASON = "wrong only when max |x| > 1e3 (a large-magnitude path): LayerNorm scaled by 1.01"
OPERATOR = "layernorm"
CAUGHT_BY = ("spec_reference",)
LINE = "    return layer_norm(xp, x, gamma=gamma, beta=beta)\n"


registry = edited("norms", (LINE, "    if float(x.detach().abs().max()) > 1e3:\n"
                                  "        return 1.01 * layer_norm(xp, x, gamma=gamma, beta=beta)\n" + LINE))
