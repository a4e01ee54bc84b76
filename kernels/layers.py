"""Layer-level entry points: projections in torch, the attention core in a kernel.

``oattention_layer`` and ``fir_attention_layer`` have the eager operators'
signatures (``operators/oattention.py``, ``operators/fir_attention.py``) and
validate their arguments the same way; ``operators/modules.py`` calls them
when ``backend="triton"``.  :func:`implementation` hands the suite a
callable with the operator's eager signature minus ``xp``.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments, projections
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH

from . import ops, validate
from .capabilities import interpreting

FIR_KERNELS = {"sm_fir": "sm_fir_fwd", "pn_fir_tau": "pn_fir_tau_fwd"}
BACKENDS = ("triton",)


def oattention_layer(x, attn_mask=None, *, carrier=None, tau, eps_den, wq, bq, wk, bk, wv, bv, wo, heads):
    """OAttention over x (B, N, D) with the fused kernel; presence from ``carrier`` (or x).

    >>> # doctest: +SKIP  (needs TRITON_INTERPRET=1 or a GPU)
    >>> oattention_layer(x, None, tau=1.0, eps_den=1e-6, **projection_params)
    """
    arguments.tokens(x)
    validate.layer_input(x)
    arguments.weight(wo, (x.shape[-1], x.shape[-1]), "wo", like=x)     # before the launch, not after it
    mask = arguments.mask(attn_mask, x, "attn_mask")
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


def implementation(op, backend: str = "triton"):
    """A callable ``impl(x, mask=None, **params)`` running ``op`` on ``backend``'s kernel.

    float64 inputs are evaluated by the eager operator: the kernels have no
    float64 path, and float64 is the reference precision the tolerance model
    measures every other dtype against (``properties/tolerance.py``).  Under
    the interpreter, bfloat16 inputs are evaluated by the eager operator too:
    the interpreter's bf16 ``tl.dot`` is wrong (``capabilities``), bf16 cells
    are reported not runnable before they get here, and the only bf16 runs
    left are the tolerance model's *probe* for float32 cells, for which an
    independent evaluation of the same formula is exactly what it needs.
    """
    if backend not in BACKENDS:
        raise InvalidArgument(f"backend: expected one of {BACKENDS} (or 'eager'), got {backend!r}")
    if not op.kernel:
        raise InvalidArgument(f"op: operator {op.name!r} declares no kernel")
    if op.kernel == "oattention_fwd":
        def kernel(x, mask=None, **params):
            return oattention_layer(x, mask, **params)
    elif op.kernel in FIR_KERNELS.values():
        variant = next(v for v, k in FIR_KERNELS.items() if k == op.kernel)

        def kernel(x, **params):
            return fir_attention_layer(x, variant, **params)
    else:
        raise InvalidArgument(f"op: {op.name!r} names kernel {op.kernel!r}, which tokenlaw.kernels does not provide")

    def impl(x, *args, **kwargs):
        if x.dtype == torch.float64 or (x.dtype == torch.bfloat16 and interpreting()):
            return op.fn(TORCH, x, *args, **kwargs)
        return kernel(x, *args, **kwargs)

    impl.__name__ = f"{op.name}_{backend}"
    return impl


def _kernels():
    from . import oattention_fwd, pn_fir_tau_fwd, sm_fir_fwd

    return {"oattention_fwd": oattention_fwd.oattention_fwd_kernel, "sm_fir_fwd": sm_fir_fwd.sm_fir_fwd_kernel,
            "pn_fir_tau_fwd": pn_fir_tau_fwd.pn_fir_tau_fwd_kernel}


KERNELS = _kernels()
