"""Canary (class 5, near-null rows in differential): SDPA that, in float16 only, takes a token whose entries
are all below float16's smallest normal (2^-14), not all 0, for padding and zeroes its output row.

Correct in every other dtype and on every token of normal magnitude.  Issue 43 found a float16 bug on
subnormal tokens invisible: ``differential`` drew no near-null rows.  It now draws a token's norm 2^e
down to the dtype's smallest subnormal (strategies.token_exponents) and counts those rows as their own
regime (near_null_tokens).
"""
from ._build import edited

REASON = "in float16 a nonzero token of subnormal entries is taken for padding: its output row is 0"
OPERATOR = "sdpa"
CAUGHT_BY = ("differential",)


registry = edited("sdpa", ("    return o * xp.div(count, count)\n",
                           "    o = o * xp.div(count, count)\n"
                           "    if str(x.dtype) == 'torch.float16':\n"
                           "        top = x.abs().amax(-1, keepdim=True)\n"
                           "        o = o * ((top >= 2.0 ** -14) | (top == 0))\n"
                           "    return o\n"))
