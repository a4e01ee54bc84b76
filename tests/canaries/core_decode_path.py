"""Canary at the attention core: a decode step (L = 1) takes another path that ignores the scale."""
from . import _core

REASON = "a decode step (L = 1) takes another path that ignores the scale"
OPERATOR = "canary_decode_path"
CAUGHT_BY = ('core_formula', 'core_decode')


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    if q.shape[2] == 1:                         # the decode path: the scale forgotten
        return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=1.0)
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
