"""The support of a sparse row map, found without sorting (docs/mathematics.md#zoo).

sparsemax and entmax-1.5 give key j a weight iff it lies above the row's
threshold tau*, the root of a decreasing function of tau:

    sparsemax:   f(tau) = sum_l (s_l - tau)_+        = 1
    entmax-1.5:  f(tau) = sum_l (s_l / 2 - tau)_+^2  = 1

Because f decreases strictly while it is positive, s_j > tau* exactly when
f(s_j) < 1: key j is in the support iff the *excess* of the keys above it,
sum_l (z_l - z_j)_+^p, is below 1.  That is one comparison per key, a sum over
the row, and no sort (so no primitive the symbolic namespaces lack); ties
need no care (a tied key adds 0 to the excess).  With the support known, the
threshold has a closed form (a mean for sparsemax, a quadratic's root for
entmax-1.5), so the result is exact up to rounding: no iteration, no stated
precision.  Cost: O(N^2) per row, one key at a time (an (N, N) slab per key,
never an N^3 array).
"""
from __future__ import annotations


def excess(xp, z, m, power):
    """sum_l m_l (z_l - z_j)_+^power for every key j: (..., N) like z.

    ``z`` holds finite values on every entry (a masked entry's is any finite
    value: ``m`` removes it from every sum); ``power`` is 1 or 2.
    """
    cols = []
    for j in range(z.shape[-1]):
        above = xp.relu(z - z[..., j:j + 1]) * m                 # (..., T, N): keys l above key j
        cols.append(xp.sum(above * above if power == 2 else above, axis=-1, keepdims=True))
    return xp.concat(cols, axis=-1)
