"""Canary (class 3, n > d): softmax attention that takes another path -- 0.9 softmax -- when n > d.

The probe that reads the applied weights is at least 2n wide, so it never takes that path; a long
sequence in a narrow head (the ordinary case) does, with row mass 0.9.
"""
from ._build import softmax_attention

REASON = "row mass 0.9 when n > d (a long sequence in a narrow head), 1 on the probe (width >= 2n)"
OPERATOR = "canary_mass_long_narrow"
CAUGHT_BY = ("simplex",)


def long_narrow(xp, x, w):
    """The weights, times 0.9 when the sequence is longer than the width."""
    return w * 0.9 if x.shape[1] > x.shape[2] else w


registry = softmax_attention(OPERATOR, "(wrong) softmax rows, but 0.9 softmax when n > d", long_narrow)
