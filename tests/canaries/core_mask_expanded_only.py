"""Canary at the attention core: a mask is honoured only in its expanded (B, H, L, S) shape; a broadcast one is ignored."""
from . import _core

REASON = "a mask is honoured only in its expanded (B, H, L, S) shape; a broadcast one is ignored"
OPERATOR = "canary_mask_expanded_only"
CAUGHT_BY = ('core_mask_forms', 'core_formula')


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, mask_shapes='expanded')


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
