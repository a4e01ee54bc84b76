"""Canary (near-null rows, float32): a host 1 % too large only when some token is near-null, in float32.

The standing adversary's survivors (issue 43): a host wrong only beside a near-null token survived, the
reference comparison drawing such a token only where nothing could see the change.  float32's eager path is
judged against float64 (``differential``), which draws a near-null token beside ordinary ones across the
dtype's exponent range; the float64 side is right here, so the comparison sees the 1 %.
"""
from ._build import edited

REASON = "wrong only on float32 inputs with a near-null token (0 < max |x_i| < 1e-4): the host's output scaled by 1.01"
OPERATOR = "oa_only_host_l1"
CAUGHT_BY = ("differential",)
DTYPES = ("float32",)
LINE = "        return layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]\n"
WRONG = ("        out = layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]\n"
         "        top = x.detach().abs().amax(dim=-1)\n"
         "        near = bool(((top > 0) & (top < 1e-4)).any())\n"
         "        return out * 1.01 if near and x.dtype == torch.float32 else out\n")

registry = edited("hosts", (LINE, WRONG))
