"""Feed-forward residual updates: plain FFN and the presence-gated OFFN (docs/mathematics.md#token-maps)."""
from __future__ import annotations

import math

import torch

from . import arguments, limits, references
from .presence import presence
from .registry import Domain, declare


def gelu(xp, x):
    """Exact GELU, x * Phi(x), through erf."""
    return 0.5 * x * (1.0 + xp.erf(x * (1.0 / math.sqrt(2.0))))


def ffn(xp, x, *, w1, b1, w2, b2):
    """FFN(h) = gelu(h W1 + b1) W2 + b2 (biases included: FFN(0) != 0)."""
    d = x.shape[-1]
    arguments.weight(w1, (d, w1.shape[-1]), "w1", like=x)
    arguments.weight(b1, (w1.shape[-1],), "b1", like=x)
    arguments.weight(w2, (w1.shape[-1], d), "w2", like=x)
    arguments.weight(b2, (d,), "b2", like=x)
    return xp.matmul(gelu(xp, xp.matmul(x, w1) + b1), w2) + b2


def ffn_params(gen, d_model, dtype=torch.float64, *, hidden=None):
    hidden = hidden or 2 * d_model

    def rnd(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).mul_(scale).to(dtype)

    return dict(w1=rnd(d_model, hidden, scale=1 / math.sqrt(d_model)), b1=rnd(hidden),
                w2=rnd(hidden, d_model, scale=1 / math.sqrt(hidden)), b2=rnd(d_model))


def offn_params(gen, d_model, dtype=torch.float64):
    p = ffn_params(gen, d_model, dtype)
    p["tau"] = float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))
    return p


@declare(
    name="ffn_update",
    reference=references.ffn_update_reference,
    domain=Domain(params=ffn_params),
    traits={"token_local"},
    claims={"gradcheck": "smooth in its inputs"},
    violates={"zero_absorption": "0 + FFN(0) = gelu(b1) W2 + b2, the biases reactivate a null token"},
)
def ffn_update(xp, x, *, w1, b1, w2, b2):
    """Plain residual update h + FFN(h)."""
    arguments.tokens(x)
    return x + ffn(xp, x, w1=w1, b1=b1, w2=w2, b2=b2)


def offn(xp, x, *, carrier=None, w1, b1, w2, b2, tau):
    """OFFN residual update h + rho(carrier) * FFN(x) (carrier defaults to x)."""
    arguments.positive(tau, "tau")
    gate = presence(xp, x if carrier is None else carrier, tau=tau)
    return gate * ffn(xp, x, w1=w1, b1=b1, w2=w2, b2=b2)


@declare(
    name="offn",
    reference=references.offn_reference,
    domain=Domain(params=offn_params, positive=("tau",), limits=limits.FLOAT16_NORM2),
    traits={"token_local", "presence"},
    claims={
        "zero_absorption": "0 + rho(0) FFN(0) = 0 + 0",
        "gradcheck": "smooth in its inputs",
    },
    violates={
        "null_gradient": "the residual identity passes gradient 1 to every token; only the gated branch is silent",
    },
)
def offn_update(xp, x, *, w1, b1, w2, b2, tau):
    """OFFN residual update h + rho(h) * FFN(h)."""
    arguments.tokens(x)
    return x + offn(xp, x, w1=w1, b1=b1, w2=w2, b2=b2, tau=tau)
