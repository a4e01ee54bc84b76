"""Canary (near-null row): presence 1 % too large whenever some token is near-null (0 < max |x_i| < 1e-4).

spec_reference draws no near-null rows in its search (their subnormal |h|^2 leaves any rounding bound),
and the differential compares the operator with itself in float64, so a uniform error on such inputs
reached no reference comparison (issue 43's standing adversary).  spec_reference's explicit edge
``near_null`` draws one near-null row whose |h|^2 is normal in float32.
"""
from ._build import edited

REASON = "wrong only on inputs with a near-null token (0 < max |x_i| < 1e-4): presence scaled by 1.01"
OPERATOR = "presence"
CAUGHT_BY = ("spec_reference",)
LINE = "    return presence(xp, x, tau=tau)\n"


registry = edited("presence", (LINE, "    top = x.detach().abs().amax(dim=-1)\n"
                                     "    if bool(((top > 0) & (top < 1e-4)).any()):\n"
                                     "        return 1.01 * presence(xp, x, tau=tau)\n" + LINE))
