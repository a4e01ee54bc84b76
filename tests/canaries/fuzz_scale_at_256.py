"""Canary (block edge): presence 1 % too large at exactly n = 256 tokens.

Two full 128-token blocks and nothing past them: a kernel whose third block starts one token late is
wrong exactly there.  Drawn at random, an exact length in 129..256 comes up about once in 5000
examples; issue 43's standing adversary found n == 256 never drawn by the default check in any
operator.  Every cell that takes a length now draws the block edges (strategies.BLOCK_EDGES).
"""
from ._build import edited

REASON = "wrong only at exactly n = 256 (two full 128-token blocks): presence scaled by 1.01"
OPERATOR = "presence"
CAUGHT_BY = ("spec_reference",)
SHAPE = "n"
LINE = "    return presence(xp, x, tau=tau)\n"


registry = edited("presence", (LINE, "    if x.shape[-2] == 256:\n        return 1.01 * presence(xp, x, tau=tau)\n" + LINE))
