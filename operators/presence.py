"""Presence rho_tau(h) = |h|^2 / (tau + |h|^2): one coefficient per token (docs/mathematics.md#presence)."""
from __future__ import annotations

import torch

from . import arguments, limits, references, spread
from .registry import Domain, declare


def presence(xp, h, *, tau):
    """rho_tau over the last axis, keeping it: shape (..., tokens, 1).

    >>> from tokenlaw.operators.xp import TORCH
    >>> presence(TORCH, torch.zeros(1, 2, 3, dtype=torch.float64), tau=1.0).flatten().tolist()
    [0.0, 0.0]
    """
    sq = xp.sum(h * h, axis=-1, keepdims=True)
    # |h|^2 passes float16's range at |h| > 256 while rho <= 1 does not: there rho is retaken over
    # u = h / M, M = max_j |h_j| (rho = |u|^2 / (tau / M^2 + |u|^2), exact in the reals), chosen only
    # where |h|^2 is not finite (spread.finite, true in the reals): float64 bits and the symbolic
    # trace are the plain formula's, and the fallback runs only when some |h|^2 overflowed.
    fits = spread.finite(xp, sq)
    return xp.unless_overflow(fits, lambda: ratio(xp, h, tau), lambda: rescaled(xp, h, sq, fits, tau))


def ratio(xp, h, tau):
    """rho = |h|^2 / (tau + |h|^2): the one line both paths of :func:`presence` run.

    ``xp.norm_ratio`` is the formula, with a backward that takes the gradient in h directly: the chain
    rule through |h|^2 multiplies dr/d|h|^2 = 1/tau at a null token (past float32's range once tau is
    ~1e-35) by d|h|^2/dh = 0, NaN where the gradient is exactly 0 (``operators.xp.TorchNamespace.norm_ratio``)."""
    return xp.norm_ratio(h, tau)


def rescaled(xp, h, sq, fits, tau):
    """:func:`ratio` where sq fits, |u|^2 / (tau / M^2 + |u|^2) over u = h / M elsewhere; each branch of
    the ``where`` gets finite inputs (finite gradients in both)."""
    ones = xp.ones_like(sq)
    plain = xp.where(fits, h, xp.zeros_like(h))        # |plain|^2 is sq where it fits (the same sum), 0 elsewhere
    top = xp.where(fits, ones, xp.max(xp.abs(h), axis=-1, keepdims=True))
    u = xp.div(h, top)
    su = xp.sum(u * u, axis=-1, keepdims=True)
    return xp.where(fits, ratio(xp, plain, tau), xp.div(su, xp.div(xp.div(tau * ones, top), top) + su))


def presence_params(gen, d_model, dtype=torch.float64):
    return {"tau": float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))}


@declare(
    name="presence",
    domain=Domain(params=presence_params, positive=("tau",), limits=limits.FLOAT16_NORM2),
    traits={"token_local", "presence"},
    reference=references.presence_reference,
    claims={
        "zero_absorption": "rho(0) = 0/(tau + 0) = 0",
        "gradcheck": "a smooth rational function of h",
        "null_gradient": "d rho/dh = 2 tau h / (tau + |h|^2)^2 vanishes at h = 0",
    },
)
def presence_op(xp, x, *, tau):
    """Presence of every token, shape (batch, tokens, 1)."""
    arguments.tokens(x)
    arguments.positive(tau, "tau")
    return presence(xp, x, tau=tau)
