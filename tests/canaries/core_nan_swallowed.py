"""Canary at the attention core: a NaN input is turned into 0 in the output (nan_to_num) while NaN propagation is declared."""
from . import _core

REASON = "a NaN input is turned into 0 in the output (nan_to_num) while NaN propagation is declared"
OPERATOR = "canary_nan_swallowed"
CAUGHT_BY = ('core_nan',)


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, swallow_nan=True)


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
