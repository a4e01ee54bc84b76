"""Canary (HF mask kinds): an HF attention function declared for both mask kinds that adds every mask to the scores.

Right for an additive mask (0 attends, finfo.min does not); a boolean mask becomes +1 on the visible keys and +0
on the hidden ones, so nothing is hidden.  Only a bridge that draws both kinds per example sees it.
"""
import torch

from tokenlaw.integrations.hf.declared import declare_hf_attention
from tokenlaw.operators.registry import Registry
from tokenlaw.properties.catalogue import collect

REASON = "declared for bool and additive masks, it adds every mask to the scores: a bool mask hides nothing"
OPERATOR = "canary_hf_bool_as_additive"
CAUGHT_BY = ("mask_respect", "spec_reference")


def adds_the_mask(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    s = query @ key.transpose(-1, -2) * scaling
    if attention_mask is not None:
        s = s + attention_mask.to(s.dtype)
    elif module.is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    return (s.softmax(-1) @ value).transpose(1, 2).contiguous(), None


canary_hf_bool_as_additive = declare_hf_attention(OPERATOR, fn=adds_the_mask, mask_format=("bool", "additive"))


def registry(base):
    return Registry([*base, *collect(__import__(__name__, fromlist=["_"]))], base.contracts)
