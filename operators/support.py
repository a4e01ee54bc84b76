"""The support of a sparse row map, found without a threshold search (docs/mathematics.md#zoo).

sparsemax and entmax-1.5 give key j a weight iff it lies above the row's
threshold tau*, the root of a decreasing function of tau:

    sparsemax:   f(tau) = sum_l (s_l - tau)_+        = 1
    entmax-1.5:  f(tau) = sum_l (s_l / 2 - tau)_+^2  = 1

Because f decreases strictly while it is positive, s_j > tau* exactly when
f(s_j) < 1: key j is in the support iff the *excess* of the keys above it,
sum_l (z_l - z_j)_+^p, is below 1.  The excess is a namespace primitive
(``xp.excess``): the symbolic namespaces state it term by term, the eager one
sums the same terms after one sort (``operators.xp.TorchNamespace.excess``);
ties need no care (a tied key adds 0 to the excess).  With the support known,
the threshold has a closed form (a mean for sparsemax, a quadratic's root for
entmax-1.5), so the result is exact up to rounding: no iteration, no stated
precision.
"""
from __future__ import annotations


def inside(xp, z, m, power, limit):
    """Key j is in the support: it is visible (m_j > 0) and sum_l m_l (z_l - z_j)_+^power < limit."""
    return xp.logical_and(xp.gt(m, 0), xp.lt(xp.excess(z, m, power), limit))
