"""OStandardize: presence-weighted standardisation over tokens (docs/mathematics.md#standardize).

    mu = sum_j p_j h_j / sum_j p_j,  var = sum_j p_j (h_j - mu)^2 / sum_j p_j,
    out_i = p_i (h_i - mu) / sqrt(var + eps)

Null tokens carry zero mass in mu and var (contextual erasure); with no
present token the output is 0, not NaN.
"""
from __future__ import annotations

import torch

from . import arguments, limits, references, spread
from .presence import presence
from .registry import Domain, declare


def ostd_params(gen, d_model, dtype=torch.float64):
    return dict(tau=float(torch.empty(()).uniform_(0.1, 2.0, generator=gen)), eps=1e-5)


@declare(
    name="ostandardize",
    reference=references.ostandardize_reference,
    domain=Domain(params=ostd_params, positive=("tau", "eps"), limits=limits.FLOAT16_NORM2),
    traits={"token_mixing", "presence"},
    claims={
        "null_receiver": "out_i carries the factor p_i = 0",
        "null_source_insertion": "a null token adds p_j = 0 to every presence-weighted sum",
        "empty_support": "no mass: mu = 0 by the guarded division, out = 0 * h / sqrt(eps) = 0",
        "permutation_equivariance": "sums over tokens are order-free",
        "gradcheck": "smooth for eps > 0",
        "null_gradient": "a null token enters only through p_j = rho(0), whose derivative is 0",
    },
)
def ostandardize(xp, x, *, tau, eps=1e-5):
    """Presence-weighted standardisation of x (B, N, D) over its tokens, per feature."""
    arguments.tokens(x)
    arguments.positive(tau, "tau")
    arguments.positive(eps, "eps")
    p = presence(xp, x, tau=tau)                               # (B, N, 1)
    mass = xp.sum(p, axis=-2, keepdims=True)                   # (B, 1, 1)
    safe = xp.where(xp.gt(mass, 0), mass, xp.ones_like(mass))
    # Backward of p / mass scales by 1 / mass^2: a subnormal mass (every present token
    # near-null) overflows it, and inf * rho'(0) = NaN reaches the null tokens.  The floor
    # (sqrt(smallest normal) per dtype; none on exact reals) only changes rows whose whole
    # presence mass is below ~1e-154 (float64) / 1e-19 (float32, bfloat16), whose outputs
    # are below that times |h - mu| / sqrt(eps).  A primitive, not an is_tensor branch:
    # the symbolic trace runs the same lines as the eager code.
    safe = xp.denominator_floor(safe)
    # Normalised weights w_j = p_j / sum p: a lone present token gets w = 1
    # exactly (p / p), so mu = h and h - mu = 0 exactly in every dtype instead
    # of rounding noise that 1 / sqrt(var + eps) would amplify ~300x.
    w = xp.div(p, safe)
    mu = xp.sum(w * x, axis=-2, keepdims=True)
    c = x - mu
    # sum_j w_j c_j^2 passes float16's range at |c| > 256 while the output is O(1): spread.standardised
    return p * spread.standardised(xp, c, eps, lambda t: xp.sum(w * t * t, axis=-2, keepdims=True), axis=-2)
