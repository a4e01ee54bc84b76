"""Row normalisers W(S): softmax and the power-normaliser (pn) family (docs/mathematics.md#normalisers).

Each takes scores ``s`` (..., T, N) and a 0/1 visibility ``mask`` broadcastable
to it, and returns weights of the same shape.  Masking is multiplicative; a
masked entry never reaches ``exp`` with a large argument (so no ``0 * inf``,
and gradients stay finite).

The pn path uses no transcendental function: ``x**10`` is four
multiplications, and rows are scaled by their largest rectified score
before the power so nothing overflows (the ratio is exact in the reals).

Intermediates stay finite wherever the weights are (float16 included):
pn_fir_c's row sum is retaken over scores scaled by 2^-k when it overflows,
and the centred and the tau-shifted scores are formed at half scale (a
power of two: the rounding is exactly that of the full-scale difference,
so float64 results are unchanged bit for bit), with tau -> -inf's limit
where even that overflows.  :func:`_finite` is the overflow test: it is a
value test written with xp primitives (``t - t == 0``), true in the reals,
so the symbolic tiers trace the ordinary path.
"""
from __future__ import annotations

from .spread import finite as _finite


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




def _row_mean(xp, s, m):
    """sum_j m_j s_j / sum_j m_j over the last axis, finite wherever the mean is.

    The plain sum of n scores in the thousands overflows float16 (65504) though their mean does
    not; there it is retaken over s * 2^-k with 2^k >= n (a power of two: no term rounds unless
    it is subnormal, and no partial sum can exceed max|s|), and divided by count * 2^-k.
    """
    count = _safe(xp, xp.sum(m, axis=-1, keepdims=True))
    total = xp.sum(s * m, axis=-1, keepdims=True)
    scale = 2.0 ** -(s.shape[-1] - 1).bit_length()
    scaled = xp.sum(s * m * scale, axis=-1, keepdims=True)
    fits = _finite(xp, total)
    # each branch gets only finite inputs, so the unselected one has finite gradients too
    return xp.where(fits, xp.div(xp.where(fits, total, xp.zeros_like(total)), count),
                    xp.div(scaled, count * scale))


def pn_centred(xp, s, mask=None):
    """pn_fir_c: pn on scores centred by their visible row mean."""
    m = _visible(xp, s, mask)
    mean = _row_mean(xp, s, m)
    # (s - mean) / 2, never past the dtype's range; power_norm is invariant to the scale
    return power_norm(xp, xp.relu(s * 0.5 - mean * 0.5) * m)


def silence_gate(xp, peak):
    """Peak silence gate g = m / (1 + m): g in [0, 1), g = 0 iff m = 0, increasing."""
    return xp.div(peak, 1.0 + peak)


# Scale of the second try at S - tau: brings |S - tau| up to 2^16 * 65504 (4.3e9) into float16's range.
# Past it, every visible key's r_j / max_j r_j = 1 - (max_j S_j - S_j) / (max_j S_j - tau) is within
# 131008 / 4.3e9 = 3e-5 of 1 (below float16's half ulp at 1): the limit (1 on every visible key) is taken there.
FAR_SCALE = 2.0 ** -16


def _shifted(xp, s, m, tau, scale):
    """scale * max(s - tau, 0) on the visible keys, 0 on the others (where, not inf * 0, past the range).

    A power-of-two scale rounds exactly as scale 1 does (subnormals aside).
    """
    return xp.where(xp.gt(m, 0), xp.relu(s * scale - tau * scale), xp.zeros_like(s)) * m


def _in_range(xp, r, far, m):
    """r's rows where they are finite, else far's (r at FAR_SCALE), else the limit tau -> -inf: m."""
    far = xp.where(_finite(xp, xp.max(far, axis=-1, keepdims=True)), far, m)
    return xp.where(_finite(xp, xp.max(r, axis=-1, keepdims=True)), r, far)


def pn_tau(xp, s, mask=None, *, tau):
    """pn_fir_tau: W = g(max_j r_tj) * r^10 / sum r^10 with r = max(s - tau, 0)."""
    m = _visible(xp, s, mask)
    r = _shifted(xp, s, m, tau, 0.5)       # r / 2: finite for |s - tau| up to twice the dtype's max
    peak = xp.max(r, axis=-1, keepdims=True)
    peak = peak + peak                     # max_j r_tj exactly, or inf past the dtype's range
    # a peak past the dtype's range has g = 1 - 1 / (1 + m) = 1 to the dtype's precision; each branch
    # gets only finite inputs, so the unselected one has finite gradients too
    fits = _finite(xp, peak)
    gate = xp.where(fits, silence_gate(xp, xp.where(fits, peak, xp.zeros_like(peak))), xp.ones_like(peak))
    return gate * power_norm(xp, _in_range(xp, r, _shifted(xp, s, m, tau, FAR_SCALE), m))
