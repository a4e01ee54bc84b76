"""OInject: an external input token enters the hidden stream as rho(x) (W x + b) (docs/mathematics.md#token-maps)."""
from __future__ import annotations

import math

import torch

from . import arguments, limits, references
from .presence import presence
from .registry import Domain, declare


def inject_params(gen, d_model, dtype=torch.float64):
    return dict(w=(torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) / math.sqrt(d_model)).to(dtype),
                b=torch.randn(d_model, generator=gen, dtype=torch.float64).to(dtype))


def oinject_params(gen, d_model, dtype=torch.float64):
    p = inject_params(gen, d_model, dtype)
    p["tau"] = float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))
    return p


def linear(xp, x, *, w, b):
    arguments.weight(w, (x.shape[-1], w.shape[-1]), "w", like=x)
    arguments.weight(b, (w.shape[-1],), "b", like=x)
    return xp.matmul(x, w) + b


@declare(name="linear_inject", domain=Domain(params=inject_params), traits={"token_local"},
         reference=references.linear_inject_reference,
         claims={"gradcheck": "affine"},
         violates={"zero_absorption": "W 0 + b = b: a zero input enters as the bias"})
def linear_inject(xp, x, *, w, b):
    """Plain input embedding x W + b."""
    arguments.tokens(x)
    return linear(xp, x, w=w, b=b)


@declare(name="oinject", domain=Domain(params=oinject_params, positive=("tau",), limits=limits.FLOAT16_NORM2), traits={"token_local", "presence"},
         reference=references.oinject_reference,
         claims={"zero_absorption": "rho(0) (W 0 + b) = 0 * b = 0",
                 "gradcheck": "smooth",
                 "null_gradient": "rho'(0) = 0 and rho(0) = 0"})
def oinject(xp, x, *, w, b, tau):
    """OInject: rho(x) (x W + b)."""
    arguments.tokens(x)
    arguments.positive(tau, "tau")
    return presence(xp, x, tau=tau) * linear(xp, x, w=w, b=b)
