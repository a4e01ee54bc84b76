"""Canary at the attention core: the backward of grouped heads gives dK, dV from one q-head of each group."""
import torch

from . import _core

REASON = "with grouped heads the backward takes dK, dV from the first q-head of each group, not their sum"
OPERATOR = "canary_gqa_backward"
CAUGHT_BY = ('core_gradient',)


class _Grouped(torch.autograd.Function):
    """The correct forward; a backward right only where Hkv = Hq (a group of one q-head)."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, is_causal, scale):
        ctx.save_for_backward(q, k, v)
        ctx.rest = (attn_mask, is_causal, scale)
        return _core.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v = ctx.saved_tensors
        attn_mask, is_causal, scale = ctx.rest
        g = q.shape[1] // k.shape[1]
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in (q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))]
            out = _core.attention(*leaves, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
            d_q, d_k, d_v = torch.autograd.grad(out, leaves, d_out)
        return d_q, d_k[:, ::g], d_v[:, ::g], None, None, None      # the bug: [:, ::g], not a sum over g


def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    return _Grouped.apply(q, k, v, attn_mask, is_causal, scale)


def registry(base=None):
    return _core.registry(OPERATOR, wrong, **{})
