"""Canary (wide tokens, float64): an O-LayerNorm 1 % too large only when d >= 17, in float64.

The standing adversary's survivor ``onorm_ln:d_ge_17:scale`` (issue 43): Hypothesis draws the width class
and the width in it towards the smallest, and at seed 0 onorm_ln's spec_reference cell drew no d >= 17 in
111 examples.  Every cell that draws its own widths now draws the explicit edge ``wide`` (d = 17..128).
"""
from ._build import edited

REASON = "wrong only on float64 tokens wider than 16: onorm_ln's output scaled by 1.01"
OPERATOR = "onorm_ln"
CAUGHT_BY = ("spec_reference",)
LINE = '    return onorm(xp, x, gamma=gamma, beta=beta, tau=tau, kind="layer")\n'
WRONG = ('    out = onorm(xp, x, gamma=gamma, beta=beta, tau=tau, kind="layer")\n'
         '    return out * 1.01 if x.shape[-1] >= 17 and x.dtype == torch.float64 else out\n')

registry = edited("norms", (LINE, WRONG))
