"""A user's own attention kernels, each declared at the core in one call.

    tokenlaw --operators examples/core_kernel/mykernel.py check

``my_attention`` is ten lines of plain torch; ``my_chunked_attention`` is the
same formula as a chunked online softmax over blocks of 64 keys (a running max,
a running sum, the accumulator rescaled at each block), the loop a Triton
kernel runs per tile.  Neither takes ``enable_gqa``: grouped heads are declared
with ``gqa=True`` (both map q-head h to kv-head h // (Hq / Hkv) themselves).
"""
import math

import torch

from tokenlaw import declare_core


def my_attention(q, k, v, *, attn_mask=None, is_causal=False, scale=None):
    """softmax(q k^T scale + mask) v; a row that sees no key gives 0."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = q @ k.transpose(-1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf)
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else s + attn_mask
    empty = (s == -math.inf).all(-1, keepdim=True)             # a row that sees no key gives 0
    # its scores set to 0 first: softmax of an all -inf row is NaN, and so was its gradient (core_gradient)
    return torch.softmax(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0) @ v


def my_chunked_attention(q, k, v, *, attn_mask=None, is_causal=False, scale=None, block=64):
    """The same formula as an online softmax over blocks of ``block`` keys."""
    b, hq, L, e = q.shape
    if k.shape[:3] != v.shape[:3] or k.shape[0] != b or k.shape[-1] != e or hq % k.shape[1]:
        raise ValueError(f"inconsistent q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    S, g = k.shape[2], hq // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    scale = 1 / math.sqrt(e) if scale is None else scale
    visible = torch.ones(L, S, dtype=torch.bool).tril() if is_causal else torch.ones(L, S, dtype=torch.bool)
    bias = torch.zeros((), dtype=q.dtype)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            visible = visible & attn_mask
        else:
            visible, bias = visible & (attn_mask > -math.inf), attn_mask
    visible = visible.expand(b, hq, L, S)
    bias = torch.where(visible, bias, torch.zeros((), dtype=q.dtype)).expand(b, hq, L, S)
    top = torch.full((b, hq, L, 1), -math.inf, dtype=q.dtype)
    den = torch.zeros((b, hq, L, 1), dtype=q.dtype)
    acc = torch.zeros((b, hq, L, v.shape[-1]), dtype=q.dtype)
    for j in range(0, S, block):
        seen = visible[..., j:j + block]
        s = (q @ k[:, :, j:j + block].transpose(-1, -2)) * scale + bias[..., j:j + block]
        s = torch.where(seen, s, torch.full_like(s, -math.inf))
        new = torch.maximum(top, s.amax(-1, keepdim=True))
        safe = torch.where(torch.isfinite(new), new, torch.zeros_like(new))
        keep = torch.where(torch.isfinite(top), torch.exp(top - safe), torch.zeros_like(top))
        p = torch.where(seen, torch.exp(s - safe), torch.zeros_like(s))
        den = den * keep + p.sum(-1, keepdim=True)
        acc = acc * keep + p @ v[:, :, j:j + block]
        top = new
    # den == 0, not den > 0: a NaN denominator (a NaN score) must give NaN, not a masked row's 0
    return torch.where(den == 0, torch.zeros_like(acc), acc / torch.where(den == 0, torch.ones_like(den), den))


my_attention_op = declare_core("my_attention", my_attention, gqa=True)
my_chunked_op = declare_core("my_chunked_attention", my_chunked_attention, gqa=True)
