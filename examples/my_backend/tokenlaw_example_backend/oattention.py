"""OAttention as a chunked online softmax, in plain torch (written from tokenlaw's docs/mathematics.md#oattention, not from its code).

    OAttn_i = p_i * sum_j m_ij p_j exp(s_ij) v_j / (eps_den + sum_j m_ij p_j exp(s_ij)),
    p = |h|^2 / (tau + |h|^2),  s_ij = <q_i, k_j> / sqrt(d_head).

The keys are visited in blocks of ``block`` columns, as a tiled kernel
visits key tiles.  Each source j of a block contributes
exp(s_ij + log p_j - M_i) for a running maximum M_i of the exponents seen so
far; when M_i grows, what was accumulated is rescaled by exp(M_old - M_new).
Only *active* sources (m_ij p_j > 0) enter M_i, and M_i starts at
log(eps_den), so a null source with a huge key cannot push the others into
underflow, and at the end eps_den enters as exp(log eps_den - M_i) <= 1.

Inputs and outputs are in the caller's dtype; the projections run in that
dtype (as a model's layer runs them); presence, scores and both sums are
accumulated in float32 (float64 for float64 inputs).

``values_only_gate=True`` is the deliberate bug of the ``example_wrong``
backend: presence gates the *values* (numerator p_j v_j) but the denominator
and the running maximum are the plain softmax's, sum_j m_ij exp(s_ij): a null
source still adds its full exp(s_ij) there (the SDPA defect OAttention
removes), and every partly present source counts as fully present.
"""
from __future__ import annotations

import math

import torch

from tokenlaw import InvalidArgument

from .common import accumulation, check_positive, check_tokens, merge_heads, split_heads


def oattention_layer(x, mask=None, *, carrier=None, wq, bq, wk, bk, wv, bv, wo, heads, tau, eps_den,
                     block: int = 4, values_only_gate: bool = False, place=None):
    """OAttention over x (B, N, D) with presence from ``carrier`` (or x); the eager operator's signature.

    ``place(t)``, when given, moves every buffer the attention core reads (q, k, v, presence, mask) to
    other storage first -- tokenlaw's ``nan_padding`` law embeds them in NaN-filled buffers.
    """
    check_tokens(x, dict(wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo), heads)
    b, n, d = x.shape
    if mask is not None and tuple(mask.shape) not in ((n, n), (b, n, n)):
        raise InvalidArgument(f"mask: expected shape ({n}, {n}) or ({b}, {n}, {n}), got {tuple(mask.shape)}")
    if carrier is not None and tuple(carrier.shape) != tuple(x.shape):
        raise InvalidArgument(f"carrier: expected the shape of x {tuple(x.shape)}, got {tuple(carrier.shape)}")
    check_positive(tau, "tau")
    check_positive(eps_den, "eps_den")
    acc = accumulation(x.dtype)
    q, k, v = (split_heads(t, heads, acc) for t in (x @ wq + bq, x @ wk + bk, x @ wv + bv))
    h = (x if carrier is None else carrier).to(acc)
    sq = (h * h).sum(-1)
    p = sq / (tau + sq)                                           # (B, N), exactly 0 at a null carrier
    vis = None if mask is None else (mask.to(acc) > 0).reshape(-1, 1, n, n)
    if place is not None:
        q, k, v, p = place(q), place(k), place(v), place(p)
        vis = None if vis is None else place(vis.to(acc)) > 0
    o = _online(q, k, v, p, vis, eps_den, block, values_only_gate)
    o = p[:, None, :, None] * o                                   # the receiver gate
    return merge_heads(o, x.dtype) @ wo


def _online(q, k, v, p, vis, eps_den, block, values_only_gate):
    """sum_j w_ij v_j / (eps_den + sum_j w_ij), w_ij = m_ij p_j exp(s_ij), one key block at a time."""
    b, heads, n, dh = q.shape
    # Dense row-major copies: the matmuls' reduction order (hence every bit) must not depend on how the
    # caller laid its tensors out in memory (tokenlaw's nan_padding law: the same values in NaN-filled
    # strided buffers give bit-identical outputs; strided BLAS paths sum in another order).
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    log_eps = torch.log(torch.tensor(float(eps_den), dtype=torch.float64)).to(q.dtype)
    top = log_eps.expand(b, heads, n, 1)              # running max of the active exponents
    mass = q.new_zeros(b, heads, n, 1)                # running denominator (without eps_den)
    out = q.new_zeros(b, heads, n, dh)                # running numerator
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        s = q @ k[:, :, lo:hi].transpose(-1, -2) / math.sqrt(dh)            # (B, H, N, blk)
        seen = torch.ones_like(s, dtype=torch.bool) if vis is None else vis[..., lo:hi].expand_as(s)
        pj = p[:, None, None, lo:hi].expand_as(s)
        if values_only_gate:
            live = seen                                                     # BUG: nulls stay in the softmax
            a = torch.where(live, s, log_eps)
        else:
            live = seen & (pj > 0)
            a = torch.where(live, s + torch.log(torch.where(live, pj, torch.ones_like(pj))), log_eps)
        new_top = torch.maximum(top, a.amax(-1, keepdim=True))
        rescale = torch.exp(top - new_top)
        e = torch.where(live, torch.exp(a - new_top), torch.zeros_like(a))
        num = e * pj if values_only_gate else e
        mass = mass * rescale + e.sum(-1, keepdim=True)
        out = out * rescale + num @ v[:, :, lo:hi]
        top = new_top
    return out / (torch.exp(log_eps - top) + mass)
