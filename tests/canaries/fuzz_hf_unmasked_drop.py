"""Canary (HF attention_mask=None): an HF attention function that drops the last key only when HF passes no mask.

HF passes ``attention_mask=None`` whenever nothing is padded (its sdpa mask skip), so this is the
path most calls take; every row judged with a mask tensor sees a correct function.
"""
import torch

from tokenlaw.integrations.hf.declared import declare_hf_attention
from tokenlaw.operators.registry import Registry
from tokenlaw.properties.catalogue import collect

REASON = "an HF attention function that ignores the last key only when attention_mask is None"
OPERATOR = "canary_hf_unmasked_drop"
CAUGHT_BY = ("unmasked",)


def drops_last_key_unmasked(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    if attention_mask is None and key.shape[2] > 1:
        key, value = key[:, :, :-1], value[:, :, :-1]
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


canary_hf_unmasked_drop = declare_hf_attention(OPERATOR, fn=drops_last_key_unmasked)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
