"""OAttention as a chunked online softmax, in plain torch (written from SPEC 1, not from tokenlaw's code).

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
and the running maximum are the plain softmax's, so a null source still adds
exp(s_ij) to the denominator -- exactly the SDPA defect OAttention removes.
"""
from __future__ import annotations

import collections
import math

import torch

from tokenlaw.operators.errors import InvalidArgument


class Math:
    """exp and log, counted per call when a Counter is given (the backend's transcendental report)."""

    def __init__(self, counter: collections.Counter | None = None):
        self.counter = counter

    def exp(self, t):
        if self.counter is not None:
            self.counter["exp"] += 1
        return torch.exp(t)

    def log(self, t):
        if self.counter is not None:
            self.counter["log"] += 1
        return torch.log(t)


def _validate(x, mask, carrier, weights, heads, tau, eps_den):
    if not torch.is_tensor(x) or x.ndim != 3 or not x.is_floating_point():
        raise InvalidArgument(f"x: expected a floating (batch, tokens, width) tensor, got "
                              f"{getattr(x, 'shape', type(x).__name__)}")
    b, n, d = x.shape
    for name, w in weights.items():
        want = (d,) if name.startswith("b") else (d, d)
        if tuple(w.shape) != want:
            raise InvalidArgument(f"{name}: expected shape {want}, got {tuple(w.shape)}")
    if not isinstance(heads, int) or heads < 1 or d % heads:
        raise InvalidArgument(f"heads: expected a positive divisor of the width {d}, got {heads!r}")
    if mask is not None and tuple(mask.shape) not in ((n, n), (b, n, n)):
        raise InvalidArgument(f"mask: expected shape ({n}, {n}) or ({b}, {n}, {n}), got {tuple(mask.shape)}")
    if carrier is not None and tuple(carrier.shape) != tuple(x.shape):
        raise InvalidArgument(f"carrier: expected the shape of x {tuple(x.shape)}, got {tuple(carrier.shape)}")
    for name, value in (("tau", tau), ("eps_den", eps_den)):
        value = float(value.detach()) if torch.is_tensor(value) else float(value)
        if not value > 0:
            raise InvalidArgument(f"{name}: expected > 0, got {value}")


def oattention_layer(x, mask=None, *, carrier=None, wq, bq, wk, bk, wv, bv, wo, heads, tau, eps_den,
                     block: int = 4, values_only_gate: bool = False, math_ops: Math | None = None, place=None):
    """OAttention over x (B, N, D) with presence from ``carrier`` (or x); the eager operator's signature.

    ``place(t)``, when given, moves every buffer the attention core reads (q, k, v, presence, mask) to
    other storage first -- tokenlaw's ``nan_padding`` law embeds them in NaN-filled buffers.
    """
    _validate(x, mask, carrier, dict(wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo), heads, tau, eps_den)
    ops = math_ops or Math()
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    b, n, d = x.shape
    dh = d // heads

    def split(t):                                   # (B, N, D) -> (B, H, N, dh), upcast for accumulation
        return t.reshape(b, n, heads, dh).transpose(1, 2).to(acc)

    q, k, v = split(x @ wq + bq), split(x @ wk + bk), split(x @ wv + bv)
    h = (x if carrier is None else carrier).to(acc)
    sq = (h * h).sum(-1)
    p = sq / (tau + sq)                                           # (B, N), exactly 0 at a null carrier
    vis = None if mask is None else (mask.to(acc) > 0).reshape(-1, 1, n, n)
    if place is not None:
        q, k, v, p = place(q), place(k), place(v), place(p)
        vis = None if vis is None else place(vis.to(acc)) > 0
    o = _online(q, k, v, p, vis, eps_den, block, values_only_gate, ops)
    o = p[:, None, :, None] * o                                   # the receiver gate
    return o.to(x.dtype).transpose(1, 2).reshape(b, n, d) @ wo


def _online(q, k, v, p, vis, eps_den, block, values_only_gate, ops):
    """sum_j w_ij v_j / (eps_den + sum_j w_ij), w_ij = m_ij p_j exp(s_ij), one key block at a time."""
    b, heads, n, dh = q.shape
    log_eps = ops.log(torch.tensor(float(eps_den), dtype=torch.float64)).to(q.dtype)
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
            a = torch.where(live, s + ops.log(torch.where(live, pj, torch.ones_like(pj))), log_eps)
        new_top = torch.maximum(top, a.amax(-1, keepdim=True))
        rescale = ops.exp(top - new_top)
        e = torch.where(live, ops.exp(a - new_top), torch.zeros_like(a))
        num = e * pj if values_only_gate else e
        mass = mass * rescale + e.sum(-1, keepdim=True)
        out = out * rescale + num @ v[:, :, lo:hi]
        top = new_top
    return out / (ops.exp(log_eps - top) + mass)
