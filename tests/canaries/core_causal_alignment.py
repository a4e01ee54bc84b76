"""Canary at the attention core: declared bottom_right, computes top_left causality: wrong only where L != S."""
from . import _core

REASON = "declared bottom_right, computes top_left causality: wrong only where L != S"
OPERATOR = "canary_causal_alignment"
CAUGHT_BY = ('core_causality', 'core_formula')


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, alignment='top_left')


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **dict(conventions=dict(causal='bottom_right')))
