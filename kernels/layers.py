"""Layer-level entry points: projections in torch, the attention core in a kernel.

``oattention_layer`` and ``fir_attention_layer`` have the eager operators'
signatures (``operators/oattention.py``, ``operators/fir_attention.py``) and
validate their arguments the same way; ``operators/modules.py`` calls them
when ``backend="triton"``, and the suite's Triton backend
(``kernels/backend.py``) runs declared operators through them.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments, projections
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH

from . import oattention_fwd, ops, pn_fir_tau_fwd, sm_fir_fwd, validate

FIR_KERNELS = {"sm_fir": "sm_fir_fwd", "pn_fir_tau": "pn_fir_tau_fwd"}


def oattention_layer(x, mask=None, *, carrier=None, tau, eps_den, wq, bq, wk, bk, wv, bv, wo, heads):
    """OAttention over x (B, N, D) with the fused kernel; presence from ``carrier`` (or x).

    >>> # doctest: +SKIP  (needs TRITON_INTERPRET=1 or a GPU)
    >>> oattention_layer(x, None, tau=1.0, eps_den=1e-6, **projection_params)
    """
    arguments.tokens(x)
    validate.layer_input(x)
    arguments.weight(wo, (x.shape[-1], x.shape[-1]), "wo", like=x)     # before the launch, not after it
    mask = arguments.mask(mask, x, "mask")           # the eager operator's name for it: one name in errors
    arguments.positive(tau, "tau")
    arguments.positive(eps_den, "eps_den")
    if carrier is not None:
        arguments.tokens(carrier, "carrier", like=x)
    p = presence(TORCH, x if carrier is None else carrier, tau=tau)[..., 0]          # (B, N)
    q, k, v = projections.project_qkv(TORCH, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    o = ops.oattention_fwd(q, k, v, p, mask, float(eps_den), False)
    return projections.output(TORCH, o, wo)


def fir_attention_layer(x, variant, *, tau=None, wq, bq, wk, bk, wv, bv, wo, heads):
    """Causal FIR-key attention (``variant`` sm_fir or pn_fir_tau) over x (B, N, D) with its kernel.

    Variants without a kernel (pn, pn_fir_c) raise InvalidArgument.
    """
    if variant not in FIR_KERNELS:
        raise InvalidArgument(f"variant: {variant!r} has no Triton kernel; kernels exist for {sorted(FIR_KERNELS)}")
    arguments.tokens(x)
    validate.layer_input(x)
    arguments.weight(wo, (x.shape[-1], x.shape[-1]), "wo", like=x)     # before the launch, not after it
    q, k, v = projections.project_qkv(TORCH, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    if variant == "sm_fir":
        if tau is not None:
            raise InvalidArgument("tau: sm_fir takes no threshold")
        o = ops.sm_fir_fwd(q, k, v)
    else:
        if tau is None:
            raise InvalidArgument("tau: pn_fir_tau needs its threshold tau")
        arguments.finite_scalar(tau, "tau")
        tau_t = tau if torch.is_tensor(tau) else torch.tensor(float(tau))
        o = ops.pn_fir_tau_fwd(q, k, v, tau_t.to(device=x.device, dtype=torch.float32).reshape(()))
    return projections.output(TORCH, o, wo)


def _kernels():

    return {"oattention_fwd": oattention_fwd.oattention_fwd_kernel, "sm_fir_fwd": sm_fir_fwd.sm_fir_fwd_kernel,
            "pn_fir_tau_fwd": pn_fir_tau_fwd.pn_fir_tau_fwd_kernel}


KERNELS = _kernels()
