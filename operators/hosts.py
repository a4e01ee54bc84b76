"""Hosts: pre-norm residual blocks of configurable depth (SPEC 1).

* standard:     h + SDPA(LN(h)),       then h + FFN(LN(h))
* OA-only:      h + OAttn(LN(h); p from h), then h + FFN(LN(h))
* OTransformer: h + OAttn(ONorm(h); p from h), then h + rho(h) FFN(ONorm(h))

Each host exposes ``layers``: the hidden state after every sub-layer, which
the closure contract compares layer by layer.
"""
from __future__ import annotations

import torch

from . import arguments, projections
from .ffn import ffn, ffn_params, offn
from .norms import layer_norm, norm_params, onorm
from .oattention import oattention
from .registry import Domain, declare
from .sdpa import sdpa

DEPTH = 2


def host_params(gen, d_model, dtype=torch.float64, *, depth=DEPTH):
    """One dict per block: attention, two norms, FFN, plus tau and eps_den."""
    blocks = []
    for _ in range(depth):
        attn = projections.attention_params(gen, d_model, dtype)
        n1 = norm_params(gen, d_model, dtype)
        n2 = norm_params(gen, d_model, dtype)
        blocks.append(dict(attn=attn, norm1=n1, norm2=n2, ffn=ffn_params(gen, d_model, dtype)))
    return dict(blocks=blocks, tau=float(torch.empty(()).uniform_(0.1, 2.0, generator=gen)), eps_den=1e-3)


def _check(x, blocks):
    arguments.tokens(x)
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise arguments.InvalidArgument(f"blocks: expected a non-empty list of block parameter dicts, got {type(blocks).__name__}")


def standard_layers(xp, x, mask=None, *, blocks, tau=None, eps_den=None):
    _check(x, blocks)
    states, h = [], x
    for b in blocks:
        h = h + sdpa(xp, layer_norm(xp, h, **b["norm1"]), mask, **b["attn"])
        states.append(h)
        h = h + ffn(xp, layer_norm(xp, h, **b["norm2"]), **b["ffn"])
        states.append(h)
    return states


def oa_only_layers(xp, x, mask=None, *, blocks, tau, eps_den):
    _check(x, blocks)
    states, h = [], x
    for b in blocks:
        h = h + oattention(xp, layer_norm(xp, h, **b["norm1"]), mask, carrier=h, tau=tau, eps_den=eps_den, **b["attn"])
        states.append(h)
        h = h + ffn(xp, layer_norm(xp, h, **b["norm2"]), **b["ffn"])
        states.append(h)
    return states


def otransformer_layers(xp, x, mask=None, *, blocks, tau, eps_den):
    _check(x, blocks)
    states, h = [], x
    for b in blocks:
        u = onorm(xp, h, tau=tau, **b["norm1"])
        h = h + oattention(xp, u, mask, carrier=h, tau=tau, eps_den=eps_den, **b["attn"])
        states.append(h)
        h = h + offn(xp, onorm(xp, h, tau=tau, **b["norm2"]), carrier=h, tau=tau, **b["ffn"])
        states.append(h)
    return states


_DOMAIN = Domain(params=host_params, mask="random", d_model=(4,), n_max=5, depth=(DEPTH,))
_HOST_TRAITS = {"token_mixing", "masked", "host"}
_REACTIVATE = "LayerNorm(0) = beta and FFN(beta) != 0 reactivate the null, a source in block 2"


@declare(name="standard_host", domain=_DOMAIN, traits=_HOST_TRAITS, layers=standard_layers,
         claims={"gradcheck": "smooth"},
         violates={"closure": "LN(0) = beta and SDPA make a null token active at the first sub-layer",
                   "null_source_insertion": "the null key adds softmax mass in block 1",
                   "null_receiver": "SDPA gives a null query the mean of the values"})
def standard_host(xp, x, mask=None, *, blocks, tau=None, eps_den=None):
    """Standard pre-norm transformer host (SDPA, LayerNorm, FFN)."""
    return standard_layers(xp, x, mask, blocks=blocks)[-1]


@declare(name="oa_only_host", domain=_DOMAIN, traits=_HOST_TRAITS | {"presence"}, layers=oa_only_layers,
         claims={"gradcheck": "smooth"},
         violates={"closure": _REACTIVATE, "null_source_insertion": _REACTIVATE,
                   "null_receiver": "FFN(LN(0)) = FFN(beta) != 0 is added to the null token"})
def oa_only_host(xp, x, mask=None, *, blocks, tau, eps_den):
    """OA-only host: OAttention in place of SDPA, plain LayerNorm and FFN."""
    return oa_only_layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den)[-1]


@declare(name="otransformer", domain=_DOMAIN, traits=_HOST_TRAITS | {"presence"}, layers=otransformer_layers,
         claims={"closure": "every sub-layer is O-closed: zero absorption and contextual erasure",
                 "null_source_insertion": "closure at the last layer",
                 "null_receiver": "every residual update of a null token is gated by rho(0) = 0",
                 "gradcheck": "smooth"},
         violates={"null_gradient": "the residual stream's identity path passes gradient to a null token"})
def otransformer(xp, x, mask=None, *, blocks, tau, eps_den):
    """OTransformer host: ONorm, OAttention (presence from the carrier), OFFN gating."""
    return otransformer_layers(xp, x, mask, blocks=blocks, tau=tau, eps_den=eps_den)[-1]
