"""Multi-head projections shared by the attention operators.

Parameters are plain arrays: ``wq, wk, wv`` of shape (d_model, d_model),
biases ``bq, bk, bv`` of shape (d_model,), output ``wo`` (d_model, d_model)
without bias (a bias after the receiver gate would re-emit from null tokens).
"""
from __future__ import annotations

import math

import torch

from . import arguments



def split_heads(xp, t, heads):
    """(B, N, D) -> (B, heads, N, D // heads)."""
    b, n, d = t.shape
    return xp.swapaxes(xp.reshape(t, (b, n, heads, d // heads)), 1, 2)


def merge_heads(xp, t):
    """(B, heads, N, dh) -> (B, N, heads * dh)."""
    b, h, n, dh = t.shape
    return xp.reshape(xp.swapaxes(t, 1, 2), (b, n, h * dh))


def project_qkv(xp, x, *, wq, bq, wk, bk, wv, bv, heads):
    """Per-head queries, keys and values, each (B, heads, N, dh)."""
    d = x.shape[-1]
    for name, w in (("wq", wq), ("wk", wk), ("wv", wv)):
        arguments.weight(w, (d, d), name, like=x)
    for name, b in (("bq", bq), ("bk", bk), ("bv", bv)):
        arguments.weight(b, (d,), name, like=x)
    arguments.heads(heads, d)
    q = split_heads(xp, xp.matmul(x, wq) + bq, heads)
    k = split_heads(xp, xp.matmul(x, wk) + bk, heads)
    v = split_heads(xp, xp.matmul(x, wv) + bv, heads)
    return q, k, v


def score_scales(dh: int) -> tuple[float, float]:
    """(p, r) with p * r = 1 / sqrt(dh) exactly: p = 2^-ceil(log2 sqrt(dh)) a power of two, r in [1, 2).

    :func:`scores` scales the keys by p before the product and the product by r after it, so no
    intermediate exceeds |S| (<q, k> itself is |S| sqrt(dh), past float16's range while S is not).
    """
    p = 2.0 ** -((((dh - 1).bit_length()) + 1) // 2)
    return p, (1.0 / math.sqrt(dh)) / p


def scores(xp, q, k):
    """s_ij = <q_i, k_j> / sqrt(d_head), formed as <q_i, p k_j> * r (:func:`score_scales`).

    p is a power of two, so <q, p k> = p <q, k> exactly (barring subnormals) and the one rounding
    of its product with r is that of <q, k> * (1 / sqrt(dh)): the same bits as the plain formula
    in every dtype, but finite wherever S is (the plain product overflows float16 at |S| > 65504 / sqrt(dh)).
    """
    p, r = score_scales(q.shape[-1])
    return xp.matmul(q, xp.swapaxes(k * p, -1, -2)) * r


def output(xp, o, wo):
    arguments.weight(wo, (o.shape[-1] * o.shape[1], o.shape[-1] * o.shape[1]), "wo", like=o)
    return xp.matmul(merge_heads(xp, o), wo)


def head_mask(mask):
    """(N, N) or (B, N, N) mask -> broadcastable over heads: (B|1, 1, N, N)."""
    if mask is None:
        return None
    if mask.ndim == 2:
        return mask[None, None]
    return mask[:, None]


def attention_params(gen, d_model, dtype=torch.float64, *, heads=None, bias_scale=1.0):
    """Random projections with non-zero biases, so null tokens have non-zero q, k, v."""
    heads = heads or (2 if d_model % 2 == 0 and d_model > 2 else 1)
    s = 1.0 / math.sqrt(d_model)

    def mat():
        return torch.randn(d_model, d_model, generator=gen, dtype=torch.float64).mul_(s).to(dtype)

    def vec():
        return torch.randn(d_model, generator=gen, dtype=torch.float64).mul_(bias_scale).to(dtype)

    return dict(wq=mat(), bq=vec(), wk=mat(), bk=vec(), wv=mat(), bv=vec(), wo=mat(), heads=heads)
