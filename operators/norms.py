"""Token norms: plain LayerNorm / RMSNorm with affine bias, and the gated ONorm (docs/mathematics.md#token-maps).

LayerNorm(0) = beta: a plain affine norm reactivates a null token.
ONorm(h) = rho(h) * Norm(h) maps 0 to 0.
"""
from __future__ import annotations

import torch

from . import arguments, limits, references, spread
from .presence import presence
from .registry import Domain, declare


def layer_norm(xp, x, *, gamma, beta, eps=1e-5):
    d = x.shape[-1]
    arguments.weight(gamma, (d,), "gamma", like=x)
    arguments.weight(beta, (d,), "beta", like=x)
    arguments.positive(eps, "eps")
    c = xp.centred(x, axis=-1)
    # the mean of squares, past float16's range at |c| > 256 while the output is O(1): spread.standardised
    return spread.standardised(xp, c, eps, lambda t: xp.mean(t * t, axis=-1, keepdims=True), axis=-1) * gamma + beta


def rms_norm(xp, x, *, gamma, beta, eps=1e-5):
    d = x.shape[-1]
    arguments.weight(gamma, (d,), "gamma", like=x)
    arguments.weight(beta, (d,), "beta", like=x)
    arguments.positive(eps, "eps")
    return spread.standardised(xp, x, eps, lambda t: xp.mean(t * t, axis=-1, keepdims=True), axis=-1) * gamma + beta


NORMS = {"layer": layer_norm, "rms": rms_norm}


def onorm(xp, x, *, carrier=None, gamma, beta, tau, kind="layer", eps=1e-5):
    """rho(carrier) * Norm(x); carrier defaults to x."""
    arguments.positive(tau, "tau")
    return presence(xp, x if carrier is None else carrier, tau=tau) * NORMS[kind](xp, x, gamma=gamma, beta=beta, eps=eps)


def norm_params(gen, d_model, dtype=torch.float64):
    return dict(gamma=(1 + 0.5 * torch.randn(d_model, generator=gen, dtype=torch.float64)).to(dtype),
                beta=torch.randn(d_model, generator=gen, dtype=torch.float64).to(dtype))


def onorm_params(gen, d_model, dtype=torch.float64):
    p = norm_params(gen, d_model, dtype)
    p["tau"] = float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))
    return p


_REACTIVATES = "Norm(0) = 0 * gamma + beta = beta: the affine bias reactivates a null token"


@declare(name="layernorm", domain=Domain(params=norm_params), traits={"token_local"},
         reference=references.layernorm_reference,
         claims={"gradcheck": "smooth for eps > 0"}, violates={"zero_absorption": _REACTIVATES})
def layernorm_op(xp, x, *, gamma, beta):
    """Plain affine LayerNorm."""
    arguments.tokens(x)
    return layer_norm(xp, x, gamma=gamma, beta=beta)


@declare(name="rmsnorm", domain=Domain(params=norm_params), traits={"token_local"},
         reference=references.rmsnorm_reference,
         claims={"gradcheck": "smooth for eps > 0"}, violates={"zero_absorption": _REACTIVATES})
def rmsnorm_op(xp, x, *, gamma, beta):
    """Plain RMSNorm with affine scale and bias."""
    arguments.tokens(x)
    return rms_norm(xp, x, gamma=gamma, beta=beta)


_ONORM_CLAIMS = {
    "zero_absorption": "rho(0) * Norm(0) = 0 * beta = 0",
    "gradcheck": "smooth for eps > 0",
    "null_gradient": "rho'(0) = 0 and rho(0) = 0 kill both product-rule terms",
}


@declare(name="onorm_ln", domain=Domain(params=onorm_params, positive=("tau",), limits=limits.FLOAT16_NORM2), traits={"token_local", "presence"},
         reference=references.onorm_ln_reference,
         claims=_ONORM_CLAIMS)
def onorm_ln(xp, x, *, gamma, beta, tau):
    """ONorm over LayerNorm: rho(h) * LayerNorm(h)."""
    arguments.tokens(x)
    return onorm(xp, x, gamma=gamma, beta=beta, tau=tau, kind="layer")


@declare(name="onorm_rms", domain=Domain(params=onorm_params, positive=("tau",), limits=limits.FLOAT16_NORM2), traits={"token_local", "presence"},
         reference=references.onorm_rms_reference,
         claims=_ONORM_CLAIMS)
def onorm_rms(xp, x, *, gamma, beta, tau):
    """ONorm over RMSNorm: rho(h) * RMSNorm(h)."""
    arguments.tokens(x)
    return onorm(xp, x, gamma=gamma, beta=beta, tau=tau, kind="rms")
