"""Canary at the attention core: at S = 129 (one past a 128-key block) the last key is dropped."""
from . import _core

REASON = "at S = 129 (one past a 128-key block) the last key is dropped"
OPERATOR = "canary_off_by_one_129"
CAUGHT_BY = ('core_formula',)


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, drop_at=129)


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
