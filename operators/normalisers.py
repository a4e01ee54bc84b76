"""Row normalisers W(S): softmax and the power-normaliser (pn) family (SPEC 2).

Each takes scores ``s`` (..., T, N) and a 0/1 visibility ``mask`` broadcastable
to it, and returns weights of the same shape.  Masking is multiplicative; a
masked entry never reaches ``exp`` with a large argument (so no ``0 * inf``,
and gradients stay finite).

The pn path uses no transcendental function: ``x**10`` is four
multiplications, and rows are scaled by their largest rectified score
before the power so nothing overflows (the ratio is exact in the reals).
"""
from __future__ import annotations


def _visible(xp, s, mask):
    return xp.ones_like(s) if mask is None else mask * xp.ones_like(s)


def softmax(xp, s, mask=None):
    """W_tj = m_tj exp(s_tj) / sum_j m_tj exp(s_tj); a fully masked row is 0/0 (NaN), as in SDPA."""
    m = _visible(xp, s, mask)
    active = xp.gt(m, 0)
    floor = xp.min(s, axis=-1, keepdims=True)
    top = xp.max(xp.where(active, s, floor), axis=-1, keepdims=True)
    e = xp.exp(xp.where(active, s - top, xp.zeros_like(s))) * m
    return xp.div(e, xp.sum(e, axis=-1, keepdims=True))


def power10(xp, x):
    """x**10 as x2 = x*x, x4 = x2*x2, x8 = x4*x4, x8*x2: no exp or log."""
    x2 = x * x
    x4 = x2 * x2
    x8 = x4 * x4
    return x8 * x2


def _safe(xp, d):
    # A zero denominator only occurs when every numerator entry is zero; map
    # it to 1 so the row is an exact 0, never 0/0.
    return xp.where(xp.gt(d, 0), d, xp.ones_like(d))


def power_norm(xp, r):
    """(r_tj)^10 / sum_j (r_tj)^10 for rectified r >= 0; an all-zero row stays 0."""
    peak = xp.max(r, axis=-1, keepdims=True)
    u = power10(xp, xp.div(r, _safe(xp, peak)))
    return xp.div(u, _safe(xp, xp.sum(u, axis=-1, keepdims=True)))


def pn(xp, s, mask=None, *, tau=0.0):
    """pn: rectify s - tau (tau = 0 in the paper's pn) and power-normalise."""
    m = _visible(xp, s, mask)
    return power_norm(xp, xp.relu(s - tau) * m)


def pn_centred(xp, s, mask=None):
    """pn_fir_c: pn on scores centred by their visible row mean."""
    m = _visible(xp, s, mask)
    count = xp.sum(m, axis=-1, keepdims=True)
    mean = xp.div(xp.sum(s * m, axis=-1, keepdims=True), _safe(xp, count))
    return power_norm(xp, xp.relu(s - mean) * m)


def silence_gate(xp, peak):
    """Peak silence gate g = m / (1 + m): g in [0, 1), g = 0 iff m = 0, increasing."""
    return xp.div(peak, 1.0 + peak)


def pn_tau(xp, s, mask=None, *, tau):
    """pn_fir_tau: W = g(max_j r_tj) * r^10 / sum r^10 with r = max(s - tau, 0)."""
    m = _visible(xp, s, mask)
    r = xp.relu(s - tau) * m
    peak = xp.max(r, axis=-1, keepdims=True)
    return silence_gate(xp, peak) * power_norm(xp, r)
