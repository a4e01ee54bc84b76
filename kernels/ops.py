"""The kernels as PyTorch custom ops (``torch.ops.tokenlaw.*``) with fake impls and autograd.

Forward runs the Triton kernel.  Backward is the *eager reference's*
backward for now: it recomputes the operator's math with the torch
namespace in fp32 and differentiates it (no fused backward kernel yet), so
gradients are exact for the formula but cost eager time and memory.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from tokenlaw.operators import normalisers, projections
from tokenlaw.operators.fir import fir
from tokenlaw.operators.fir_attention import causal_mask
from tokenlaw.operators.oattention import oattention_core
from tokenlaw.operators.xp import TORCH

from . import oattention_fwd as _oa
from . import pn_fir_tau_fwd as _pn
from . import sm_fir_fwd as _sm


def _empty_like_heads(q):
    return torch.empty(q.shape, dtype=q.dtype, device=q.device)


def _eager_backward(reference, ctx, grad, n_grads):
    """Gradients of ``reference`` (fp32 eager math) w.r.t. its first ``n_grads`` saved inputs."""
    saved = ctx.saved_tensors
    with torch.enable_grad():
        leaves = [t.detach().float().requires_grad_(True) for t in saved[:n_grads]]
        out = reference(*leaves, *saved[n_grads:])
        grads = torch.autograd.grad(out, leaves, grad.float(), allow_unused=True)
    return [None if g is None else g.to(t.dtype) for g, t in zip(grads, saved)]


# -- OAttention -----------------------------------------------------------------
@torch.library.custom_op("tokenlaw::oattention_fwd", mutates_args=())
def oattention_fwd(q: Tensor, k: Tensor, v: Tensor, p: Tensor, mask: Optional[Tensor],
                   eps_den: float, causal: bool) -> Tensor:
    """OAttention core (B, H, N, dh) with presence p (B, N); see ``kernels/oattention_fwd.py``."""
    return _oa.oattention_fwd(q, k, v, p, mask, eps_den=eps_den, causal=causal)


@oattention_fwd.register_fake
def _(q, k, v, p, mask, eps_den, causal):
    return _empty_like_heads(q)


def oattention_reference(q, k, v, p, mask, eps_den, causal):
    """The eager math the kernel implements (fp32 or float64)."""
    n = q.shape[-2]
    m = None if mask is None else (mask if mask.ndim == 3 else mask[None]).to(q.dtype)[:, None]
    if causal:
        tri = causal_mask(TORCH, q, n)[None, None]
        m = tri if m is None else m * tri
    p = p.to(q.dtype)
    return oattention_core(TORCH, q, k, v, p[:, None, None, :], p[:, None, :, None], m, eps_den=eps_den)


def _oa_setup(ctx, inputs, output):
    q, k, v, p, mask, eps_den, causal = inputs
    ctx.eps_den, ctx.causal, ctx.has_mask = eps_den, causal, mask is not None
    ctx.save_for_backward(q, k, v, p, *(() if mask is None else (mask,)))


def _oa_backward(ctx, grad):
    def ref(q, k, v, p, *mask):
        return oattention_reference(q, k, v, p, mask[0] if mask else None, ctx.eps_den, ctx.causal)

    gq, gk, gv, gp = _eager_backward(ref, ctx, grad, 4)
    return gq, gk, gv, gp, None, None, None


oattention_fwd.register_autograd(_oa_backward, setup_context=_oa_setup)


# -- sm_fir -------------------------------------------------------------------------
@torch.library.custom_op("tokenlaw::sm_fir_fwd", mutates_args=())
def sm_fir_fwd(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Causal softmax attention over FIR keys (B, H, N, dh); see ``kernels/sm_fir_fwd.py``."""
    return _sm.sm_fir_fwd(q, k, v)


@sm_fir_fwd.register_fake
def _(q, k, v):
    return _empty_like_heads(q)


def sm_fir_reference(q, k, v):
    s = projections.scores(TORCH, q, fir(TORCH, k))
    return normalisers.softmax(TORCH, s, causal_mask(TORCH, s, q.shape[-2])) @ v


def _sm_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _sm_backward(ctx, grad):
    return tuple(_eager_backward(sm_fir_reference, ctx, grad, 3))


sm_fir_fwd.register_autograd(_sm_backward, setup_context=_sm_setup)


# -- pn_fir_tau -------------------------------------------------------------------
@torch.library.custom_op("tokenlaw::pn_fir_tau_fwd", mutates_args=())
def pn_fir_tau_fwd(q: Tensor, k: Tensor, v: Tensor, tau: Tensor) -> Tensor:
    """pn_fir_tau over FIR keys (B, H, N, dh), tau a 0-d tensor (learnable); see ``kernels/pn_fir_tau_fwd.py``."""
    return _pn.pn_fir_tau_fwd(q, k, v, tau)


@pn_fir_tau_fwd.register_fake
def _(q, k, v, tau):
    return _empty_like_heads(q)


def pn_fir_tau_reference(q, k, v, tau):
    s = projections.scores(TORCH, q, fir(TORCH, k))
    return normalisers.pn_tau(TORCH, s, causal_mask(TORCH, s, q.shape[-2]), tau=tau) @ v


def _pn_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _pn_backward(ctx, grad):
    return tuple(_eager_backward(pn_fir_tau_reference, ctx, grad, 4))


pn_fir_tau_fwd.register_autograd(_pn_backward, setup_context=_pn_setup)

OPS = {"oattention_fwd": oattention_fwd, "sm_fir_fwd": sm_fir_fwd, "pn_fir_tau_fwd": pn_fir_tau_fwd}
