"""Canary at the attention core: k and v of different lengths are accepted (v is cut to k's length) and a tensor returned."""
from . import _core

REASON = "k and v of different lengths are accepted (v is cut to k's length) and a tensor returned"
OPERATOR = "canary_kv_lengths"
CAUGHT_BY = ('core_shape_contract',)


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, any_kv_length=True)


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
