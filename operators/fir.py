"""Causal 7-tap FIR smoothing of keys (docs/mathematics.md#fir).

    k~_t = sum_{k=0..6} w_k k_{t-k},  w_k ∝ exp(-k^2 / (2 sigma^2)), sigma = 2,

normalised to sum 1 (project choice: DC gain 1), zero padding before the
first token.  The taps are a parameter, so the symbolic tier can treat them
as symbols constrained by w_k > 0 and sum_k w_k = 1.
"""
from __future__ import annotations

import math

import torch

from . import arguments, references
from .registry import Domain, declare

N_TAPS = 7
SIGMA = 2.0


def gaussian_taps(n_taps: int = N_TAPS, sigma: float = SIGMA) -> tuple:
    """The half-Gaussian taps, normalised to sum 1 (float64)."""
    raw = [math.exp(-k * k / (2 * sigma * sigma)) for k in range(n_taps)]
    total = math.fsum(raw)
    return tuple(r / total for r in raw)


TAPS = gaussian_taps()


def shift(xp, x, k):
    """x delayed by k tokens along axis -2 with zero padding: out_t = x_{t-k}."""
    n = x.shape[-2]
    # No branch on the shape: past the sequence's length everything is padding (k = n), so the
    # code runs the same lines at every n and a proof at one length covers the path of all.
    k = min(k, n)
    return xp.concat([xp.zeros_like(x[..., :k, :]), x[..., : n - k, :]], axis=-2)


def fir(xp, x, *, taps=TAPS):
    """Causal FIR along the token axis (-2) of x (..., N, D)."""
    out = taps[0] * x
    for k in range(1, len(taps)):
        out = out + taps[k] * shift(xp, x, k)
    return out


def fir_params(gen, d_model, dtype=torch.float64):
    return {}


@declare(
    name="fir",
    domain=Domain(params=fir_params, n_max=9),
    traits={"token_mixing", "causal", "filter", "positional"},
    reference=references.fir_reference,
    claims={
        "causality": "k~_t uses k_{t-0..t-6} only (zero padding before the start)",
        "dc_gain": "the taps sum to 1; an impulse returns the taps",
        "linearity": "a fixed linear filter",
        "gradcheck": "linear",
    },
    violates={"permutation_equivariance": "positional by design: a delay line"},
)
def fir_op(xp, x, *, taps=TAPS):
    """Causal FIR smoothing of a key sequence x (B, N, D)."""
    arguments.tokens(x)
    if len(taps) < 1:
        raise arguments.InvalidArgument("taps: expected at least one tap")
    return fir(xp, x, taps=taps)
