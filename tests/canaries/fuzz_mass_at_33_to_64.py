"""Canary (length band): SDPA whose rows have mass 1.01 only when 33 <= n <= 64.

The shipping ``sdpa_weights`` (operators/sdpa.py) scaled by 1.01 at those lengths (one 64-token tile,
more than one 32-token one).  Issue 43 (class 7) found this mass error holding: 129 of 285 cells never
drew n > 32.  The 33..64 band is drawn in three examples in twenty and at least once per cell.
"""
from ._build import edited

REASON = "every row's weights sum to 1.01 when the sequence has 33 to 64 tokens"
OPERATOR = "sdpa"
CAUGHT_BY = ("simplex",)
SHAPE = "n"
LINE = "    return normalisers.softmax(xp, s, mask)\n"

registry = edited("sdpa", (LINE, "    w = normalisers.softmax(xp, s, mask)\n    return w * 1.01 if 33 <= s.shape[-1] <= 64 else w\n"))
