"""pn_fir_tau as an online power normalisation over key blocks, in plain torch (written from tokenlaw's docs/mathematics.md#pn-fir-tau).

    k~_t = sum_{k=0..6} w_k k_{t-k}   (half-Gaussian taps, sigma 2, summing to 1; zero padding)
    S_tj = <q_t, k~_j> / sqrt(d_head),  j <= t;   r_tj = max(S_tj - tau, 0)
    W_tj = g_t r_tj^10 / sum_j r_tj^10,  g_t = m_t / (1 + m_t),  m_t = max_j r_tj
    o_t  = sum_j W_tj v_j

The keys are visited in blocks of ``block`` columns.  Each block's rectified
scores are divided by the running peak m_t first, so (r / m)^10 <= 1 never
overflows, and when the peak grows what was accumulated is rescaled by
(m_old / m_new)^10.  Powers are multiplications, the gate a division: no exp
or log anywhere.  A row with no positive S - tau keeps m_t = 0: its weights,
output and every gradient through it are exactly 0 (guarded divisions).
Projections run in the caller's dtype; the FIR, scores and sums accumulate
in float32 (float64 for float64 inputs).
"""
from __future__ import annotations

import math

import torch

from .common import accumulation, check_finite, check_tokens, merge_heads, split_heads

SIGMA, N_TAPS = 2.0, 7
_RAW = [math.exp(-k * k / (2 * SIGMA * SIGMA)) for k in range(N_TAPS)]
TAPS = tuple(w / math.fsum(_RAW) for w in _RAW)      # DC gain 1 (docs/mathematics.md#fir: the project's choice)


def _pow10(t):
    t2 = t * t
    t8 = (t2 * t2) * (t2 * t2)
    return t8 * t2


def _fir(k, taps):
    """Causal FIR along the token axis (-2), zero padding before the first token."""
    n = k.shape[-2]
    padded = torch.cat([k.new_zeros(*k.shape[:-2], len(taps) - 1, k.shape[-1]), k], dim=-2)
    start = len(taps) - 1
    return sum(w * padded[..., start - i:start - i + n, :] for i, w in enumerate(taps))


def pn_fir_tau_layer(x, *, wq, bq, wk, bk, wv, bv, wo, heads, tau, taps=TAPS, block: int = 4, place=None):
    """pn_fir_tau over x (B, N, D); the eager operator's signature (``taps`` as the probe of score laws sets it)."""
    check_tokens(x, dict(wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo), heads)
    check_finite(tau, "tau")
    b, n, dh = x.shape[0], x.shape[1], x.shape[-1] // heads
    acc = accumulation(x.dtype)
    q, k, v = (split_heads(t, heads, acc) for t in (x @ wq + bq, x @ wk + bk, x @ wv + bv))
    if place is not None:
        q, k, v = place(q), place(k), place(v)
    # Dense row-major copies: the reduction order (hence every bit) must not depend on the callers' memory
    # layout (nan_padding found a 2e-7 float32 difference when q, k, v sat in strided NaN buffers).
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    k = _fir(k, taps)
    causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
    peak = q.new_zeros(b, heads, n, 1)          # running m_t
    mass = q.new_zeros(b, heads, n, 1)          # running sum (r / m)^10
    out = q.new_zeros(b, heads, n, dh)          # running sum (r / m)^10 v
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        s = q @ k[:, :, lo:hi].transpose(-1, -2) / math.sqrt(dh)
        r = torch.where(causal[:, lo:hi], torch.clamp(s - tau, min=0), torch.zeros_like(s))
        new_peak = torch.maximum(peak, r.amax(-1, keepdim=True))
        live = new_peak > 0
        safe = torch.where(live, new_peak, torch.ones_like(new_peak))
        rescale = _pow10(torch.where(live, peak / safe, torch.zeros_like(peak)))
        w = _pow10(r / safe)
        mass = mass * rescale + w.sum(-1, keepdim=True)
        out = out * rescale + w @ v[:, :, lo:hi]
        peak = new_peak
    gate = peak / (1 + peak)
    o = gate * out / torch.where(mass > 0, mass, torch.ones_like(mass))
    return merge_heads(o, x.dtype) @ wo
