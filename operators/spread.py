"""Standardising by a second moment without overflow: c / sqrt(moment(c) + eps) (docs/mathematics.md#standardize).

LayerNorm, RMSNorm, the ONorms and OStandardize divide centred values c by the root of a second
moment of c (a mean of squares over features, or a presence-weighted sum of squares over
tokens).  The quotient is at most sqrt(count) in magnitude, but the moment is |c|^2-sized: in
float16 it overflows for |c| past 256 (65504 = 256^2), and c / sqrt(inf) = 0 where the true
output is O(1).  There the quotient is retaken over u = c / M, M = max |c| along the moment's
axis:

    c / sqrt(moment(c) + eps) = u / sqrt(moment(u) + eps / M^2)        (exact in the reals, M > 0)

with |u| <= 1, so moment(u) <= the moment's total weight.  The fallback is chosen only where the
plain moment is not finite (:func:`finite`, true in the reals): float64 results are the plain
formula's bit for bit, and the symbolic tiers trace the plain formula.
"""
from __future__ import annotations


def finite(xp, t):
    """True where ``t`` is finite: t - t is exactly 0 for a finite float and NaN for +-inf or NaN.

    Always true in the reals (the symbolic namespaces fold it), so a ``where`` on it traces as its
    first branch; in floating point it selects a fallback only where an intermediate overflowed.
    """
    return xp.eq(t - t, xp.zeros_like(t))


def standardised(xp, c, eps, moment, *, axis):
    """c / sqrt(moment(c) + eps), finite wherever it is in the reals.

    ``moment(t)`` is the second moment of t (quadratic in t, reduced over ``axis`` with keepdims),
    so moment(c / M) = moment(c) / M^2.  Each branch of the final ``where`` gets only finite
    inputs, so the unselected one has finite gradients too.
    """
    var = moment(c)
    fits = finite(xp, var)
    return xp.unless_overflow(fits, lambda: xp.div(c, xp.sqrt(var + eps)),
                              lambda: _standardised_rescaled(xp, c, eps, moment, var, fits, axis))


def _standardised_rescaled(xp, c, eps, moment, var, fits, axis):
    """:func:`standardised` where ``var`` fits, the same over u = c / M (M = max |c|) where it overflowed."""
    ones = xp.ones_like(var)
    plain = xp.div(c, xp.sqrt(xp.where(fits, var, ones) + eps))
    top = xp.where(fits, ones, xp.max(xp.abs(c), axis=axis, keepdims=True))   # M > 0 where chosen
    u = xp.div(c, top)
    far = xp.div(u, xp.sqrt(moment(u) + xp.div(xp.div(eps * ones, top), top)))
    return xp.where(fits, plain, far)
