"""Canary (HF scaling): an HF attention function that ignores ``scaling`` and always divides by sqrt(dh).

Every test used to pass scaling = 1/sqrt(dh), where the two agree; the bridge now draws scaling.
"""
import math

import torch

from tokenlaw.integrations.hf.declared import declare_hf_attention
from tokenlaw.operators.registry import Registry
from tokenlaw.properties.catalogue import collect

REASON = "ignores HF's scaling argument (uses 1/sqrt(dh)), right only when scaling = 1/sqrt(dh)"
OPERATOR = "canary_hf_ignores_scaling"
CAUGHT_BY = ("spec_reference",)


def fixed_scale(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask,
                                                           scale=1.0 / math.sqrt(query.shape[-1]))
    return out.transpose(1, 2).contiguous(), None


canary_hf_ignores_scaling = declare_hf_attention(OPERATOR, fn=fixed_scale)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
