"""Canary at the attention core: q-head h reads kv-head h % Hkv instead of h // (Hq / Hkv)."""
from . import _core

REASON = "q-head h reads kv-head h % Hkv instead of h // (Hq / Hkv)"
OPERATOR = "canary_gqa_modulo"
CAUGHT_BY = ('core_gqa', 'core_formula')


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, heads='modulo')


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
