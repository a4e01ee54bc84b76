"""FlexAttention mods people use, each declared with what it claims.

    tokenlaw --operators examples/flex/flex_mods.py check --profile smoke

Each pair is written as in a model: ``score_mod(score, b, h, q_idx, kv_idx)`` and
``mask_mod(b, h, q_idx, kv_idx)``.  ``declare_flex`` turns the pair into an operator whose claims follow
from what is stated (``tokenlaw docs flex``).
"""
import torch

from tokenlaw import declare_flex

WINDOW = 3          # sliding window: a query sees itself and the WINDOW keys before it
DOCUMENT = 5        # document masking: tokens form documents of DOCUMENT tokens (jagged sequences packed)
PREFIX = 4          # prefix-LM: the first PREFIX tokens see each other both ways
SOFTCAP = 20.0      # tanh softcapping of the scores (Gemma 2)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= WINDOW)


def alibi(score, b, h, q_idx, kv_idx):
    """A linear distance penalty per head, slope 2^-(h + 1)."""
    return score - torch.exp2(-(h + 1.0)) * (q_idx - kv_idx)


def same_document(b, h, q_idx, kv_idx):
    return (q_idx // DOCUMENT == kv_idx // DOCUMENT) & (q_idx >= kv_idx)


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx < PREFIX) | (q_idx >= kv_idx)


def softcap(score, b, h, q_idx, kv_idx):
    return SOFTCAP * torch.tanh(score / SOFTCAP)


causal_attention = declare_flex("flex_causal", mask_mod=causal, causal=True, relative=True)
sliding_window_attention = declare_flex("flex_sliding_window", mask_mod=sliding_window, causal=True, relative=True)
alibi_attention = declare_flex("flex_alibi", score_mod=alibi, mask_mod=causal, causal=True, additive=True,
                               relative=True)
document_attention = declare_flex("flex_document", mask_mod=same_document, causal=True)
# not causal: the prefix's first tokens see the later prefix tokens by design (no causal=True, no causality claim)
prefix_lm_attention = declare_flex("flex_prefix_lm", mask_mod=prefix_lm)
softcap_attention = declare_flex("flex_softcap", score_mod=softcap, mask_mod=causal, causal=True, relative=True)
