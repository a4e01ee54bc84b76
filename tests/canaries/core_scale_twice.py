"""Canary at the attention core: an explicit scale is applied twice (scores * scale * scale)."""
from . import _core

REASON = "an explicit scale is applied twice (scores * scale * scale)"
OPERATOR = "canary_scale_twice"
CAUGHT_BY = ('core_formula', 'core_scale')


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, scale_twice=True)


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
