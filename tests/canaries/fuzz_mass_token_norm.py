"""Canary (class 3, token norms): softmax attention whose row i is scaled by min(1, |x_i|^2).

The probe that reads the applied weights has tokens of norm >= 1, where the factor is 1: only the
operator's real rows (the case's own tokens, |x_i| < 1 for many) show row masses below 1.
"""
from ._build import softmax_attention

REASON = "row mass min(1, |x_i|^2): 1 on the probe's tokens (norm >= 1), 0.15-0.99 on ordinary tokens"
OPERATOR = "canary_mass_token_norm"
CAUGHT_BY = ("simplex",)


def by_token_norm(xp, x, w):
    """Row i of the weights times min(1, |x_i|^2)."""
    r = xp.sum(x * x, axis=-1, keepdims=True)[:, None]                # (B, 1, N, 1): |x_i|^2 per query
    return w * xp.where(xp.gt(r, xp.ones_like(r)), xp.ones_like(r), r)


registry = softmax_attention(OPERATOR, "(wrong) softmax rows, but scaled by min(1, |x_i|^2)", by_token_norm)
