"""Canary (HF causal, attention_mask=None): a causal model's attention function that never reads module.is_causal.

With padding HF hands it a causal mask and it is causal; with nothing padded HF's sdpa mask is skipped
(``attention_mask=None``, causality left to ``module.is_causal``) and it attends to every later token.
"""
import torch

from tokenlaw.integrations.hf.declared import declare_hf_attention
from tokenlaw.operators.registry import Registry
from tokenlaw.properties.catalogue import collect

REASON = "declared causal, forgets causality when attention_mask is None (ignores module.is_causal)"
OPERATOR = "canary_hf_unmasked_acausal"
CAUGHT_BY = ("unmasked",)


def mask_only(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


canary_hf_unmasked_acausal = declare_hf_attention(OPERATOR, fn=mask_only, causal=True)


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
