"""Standardize: plain (unweighted) standardisation over tokens, the null-unsafe baseline of OStandardize.

    mu = mean_j h_j,  var = mean_j (h_j - mu)^2,  out_i = (h_i - mu) / sqrt(var + eps)

A tabular host that z-scores each feature over its rows uses this.  A null
row counts as a sample at 0: it drags mu and var (contextual erasure lost)
and comes out as -mu / sigma, not 0 (a null receiver reactivated).
"""
from __future__ import annotations

import torch

from . import arguments, references, spread
from .registry import Domain, declare


def standardize(xp, x, *, eps=1e-5):
    """Per-feature standardisation of x (B, N, D) over its N tokens."""
    arguments.positive(eps, "eps")
    # Shifted data: centre on the first token before averaging.  Near-equal tokens then
    # differ exactly (Sterbenz) and their mean is formed from small numbers, instead of
    # rounding a mean of magnitude |h| whose error 1 / sqrt(var + eps) amplifies (float16
    # lost 5% on two tokens 1.339, 1.320; the fuzzer's differential found it).
    shifted = x - x[..., :1, :]
    c = shifted - xp.mean(shifted, axis=-2, keepdims=True)
    # the mean of squares, past float16's range at |c| > 256 while the output is O(1) (the default check,
    # seed 4: two tokens -195, 322 give c = +-259, c^2 = 66900 = inf, and 0 for +-1): spread.standardised
    return spread.standardised(xp, c, eps, lambda t: xp.mean(t * t, axis=-2, keepdims=True), axis=-2)


def standardize_params(gen, d_model, dtype=torch.float64):
    return {}


@declare(
    name="standardize",
    reference=references.standardize_reference,
    domain=Domain(params=standardize_params),
    traits={"token_mixing"},
    claims={
        "permutation_equivariance": "means over tokens are order-free",
        "gradcheck": "smooth for eps > 0",
    },
    violates={
        "null_receiver": "a null row comes out as -mu / sigma",
        "null_source_insertion": "a null row is one more sample at 0 in mu and var",
    },
)
def standardize_op(xp, x):
    """Plain standardisation of x over its tokens, per feature."""
    arguments.tokens(x)
    return standardize(xp, x)
