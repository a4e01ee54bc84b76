"""Canary (near-null rows, float64): a host whose later queries lose key 0 whenever some token is near-null.

The standing adversary's survivor ``oa_only_host_l1:near_null_row:drop_key`` (issue 43): spec_reference
draws a near-null token only at its explicit edge ``near_null``, whose simplest draws were n = 1 and the
near-null token first -- where dropping key 0 drops a key of presence about 0, nothing to see.  The edge now
draws n >= 2 with the near-null token second in its simplest draw, beside an ordinary key 0.
"""
from ._build import edited

REASON = "wrong only on float64 inputs with a near-null token: every query after the first loses key 0"
OPERATOR = "oa_only_host_l1"
CAUGHT_BY = ("spec_reference",)
LINE = "        return layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den, inject=inject)[-1]\n"
WRONG = ("        top = x.detach().abs().amax(dim=-1)\n"
         "        if bool(((top > 0) & (top < 1e-4)).any()) and x.dtype == torch.float64 and x.shape[-2] > 1:\n"
         "            n = x.shape[-2]\n"
         "            mask = (torch.ones(*x.shape[:-1], n, dtype=x.dtype) if mask is None else mask.clone())\n"
         "            mask[..., 1:, 0] = 0\n" + LINE)

registry = edited("hosts", (LINE, WRONG))
