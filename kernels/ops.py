"""The kernels as PyTorch custom ops (``torch.ops.tokenlaw.*``) with fake impls and fused backwards.

Each forward op returns its output *and* the per-row statistics its
backward needs (``(B, H, N)`` each, fp32 or int32, marked not
differentiable), and autograd saves only the inputs and those statistics
(not even the output); the Python functions ``oattention_fwd``, ``sm_fir_fwd``
and ``pn_fir_tau_fwd`` return the output alone.  Each backward is a custom
op of its own (``*_bwd``) running the fused Triton backward kernels
(``kernels/*_bwd.py``): what is saved is O(N) per head, never an N x N
tensor (a caller's mask is saved by reference), and a compiled
graph (``torch.compile``, ``opcheck``'s aot test) sees only fake tensors.
``OPS`` maps each name to its forward custom op.
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

from . import oattention_bwd as _oab
from . import oattention_fwd as _oa
from . import pn_fir_tau_bwd as _pnb
from . import pn_fir_tau_fwd as _pn
from . import sm_fir_bwd as _smb
from . import sm_fir_fwd as _sm


def _empty_like_heads(q):
    return torch.empty(q.shape, dtype=q.dtype, device=q.device)


def _row_stat(q, dtype=torch.float32):
    return torch.empty(q.shape[:-1], dtype=dtype, device=q.device)


# -- OAttention -----------------------------------------------------------------
@torch.library.custom_op("tokenlaw::oattention_fwd", mutates_args=())
def oattention_fwd_op(q: Tensor, k: Tensor, v: Tensor, p: Tensor, mask: Optional[Tensor],
                      eps_den: float, causal: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """OAttention core (B, H, N, dh) with presence p (B, N), and its row statistics (max, den, top source);
    see ``kernels/oattention_fwd.py``."""
    return _oa.oattention_fwd(q, k, v, p, mask, eps_den=eps_den, causal=causal)


@oattention_fwd_op.register_fake
def _(q, k, v, p, mask, eps_den, causal):
    return _empty_like_heads(q), _row_stat(q), _row_stat(q), _row_stat(q, torch.int32)


@torch.library.custom_op("tokenlaw::oattention_bwd", mutates_args=())
def oattention_bwd_op(do: Tensor, q: Tensor, k: Tensor, v: Tensor, p: Tensor, mask: Optional[Tensor],
                      row_max: Tensor, row_den: Tensor, row_arg: Tensor, eps_den: float,
                      causal: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dq, dk, dv, dp) by the fused backward kernels; see ``kernels/oattention_bwd.py``."""
    mask = None if mask is None else (mask if mask.ndim == 3 else mask[None])
    return _oab.oattention_bwd(do, q, k, v, p, mask, row_max, row_den, row_arg, eps_den=eps_den, causal=causal)


@oattention_bwd_op.register_fake
def _(do, q, k, v, p, mask, row_max, row_den, row_arg, eps_den, causal):
    return _empty_like_heads(q), _empty_like_heads(k), _empty_like_heads(v), torch.empty_like(p)


def oattention_fwd(q, k, v, p, mask, eps_den, causal):
    """OAttention core (B, H, N, dh): the output of ``tokenlaw::oattention_fwd``, differentiable in q, k, v, p."""
    return oattention_fwd_op(q, k, v, p, mask, eps_den, causal)[0]


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
    ctx.mark_non_differentiable(*output[1:])
    ctx.eps_den, ctx.causal = eps_den, causal
    ctx.save_for_backward(q, k, v, p, mask, *output[1:])        # O is not needed: delta is summed from dP


def _oa_backward(ctx, grad, *_grad_stats):
    q, k, v, p, mask, *stats = ctx.saved_tensors
    dq, dk, dv, dp = oattention_bwd_op(grad, q, k, v, p, mask, *stats, ctx.eps_den, ctx.causal)
    return dq, dk, dv, dp, None, None, None


oattention_fwd_op.register_autograd(_oa_backward, setup_context=_oa_setup)


# -- sm_fir -------------------------------------------------------------------------
@torch.library.custom_op("tokenlaw::sm_fir_fwd", mutates_args=())
def sm_fir_fwd_op(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Causal softmax attention over FIR keys (B, H, N, dh) and its row (max, sum, top key);
    see ``kernels/sm_fir_fwd.py``."""
    return _sm.sm_fir_fwd(q, k, v)


@sm_fir_fwd_op.register_fake
def _(q, k, v):
    return _empty_like_heads(q), _row_stat(q), _row_stat(q), _row_stat(q, torch.int32)


@torch.library.custom_op("tokenlaw::sm_fir_bwd", mutates_args=())
def sm_fir_bwd_op(do: Tensor, q: Tensor, k: Tensor, v: Tensor, row_max: Tensor, row_sum: Tensor,
                  row_arg: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv) by the fused backward kernels; see ``kernels/sm_fir_bwd.py``."""
    return _smb.sm_fir_bwd(do, q, k, v, row_max, row_sum, row_arg)


@sm_fir_bwd_op.register_fake
def _(do, q, k, v, row_max, row_sum, row_arg):
    return _empty_like_heads(q), _empty_like_heads(k), _empty_like_heads(v)


def sm_fir_fwd(q, k, v):
    """Causal softmax attention over FIR keys (B, H, N, dh): the output of ``tokenlaw::sm_fir_fwd``."""
    return sm_fir_fwd_op(q, k, v)[0]


def sm_fir_reference(q, k, v):
    s = projections.scores(TORCH, q, fir(TORCH, k))
    return normalisers.softmax(TORCH, s, causal_mask(TORCH, s, q.shape[-2])) @ v


def _sm_setup(ctx, inputs, output):
    ctx.mark_non_differentiable(*output[1:])
    ctx.save_for_backward(*inputs, *output[1:])


def _sm_backward(ctx, grad, *_grad_stats):
    return sm_fir_bwd_op(grad, *ctx.saved_tensors)


sm_fir_fwd_op.register_autograd(_sm_backward, setup_context=_sm_setup)


# -- pn_fir_tau -------------------------------------------------------------------
@torch.library.custom_op("tokenlaw::pn_fir_tau_fwd", mutates_args=())
def pn_fir_tau_fwd_op(q: Tensor, k: Tensor, v: Tensor, tau: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """pn_fir_tau over FIR keys (B, H, N, dh), tau a 0-d tensor (learnable), and its row statistics
    (peak, arg); see ``kernels/pn_fir_tau_fwd.py``."""
    return _pn.pn_fir_tau_fwd(q, k, v, tau)


@pn_fir_tau_fwd_op.register_fake
def _(q, k, v, tau):
    return _empty_like_heads(q), _row_stat(q), _row_stat(q, torch.int32)


@torch.library.custom_op("tokenlaw::pn_fir_tau_bwd", mutates_args=())
def pn_fir_tau_bwd_op(do: Tensor, q: Tensor, k: Tensor, v: Tensor, tau: Tensor, peak: Tensor,
                      arg: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dq, dk, dv, dtau) by the fused backward kernels; see ``kernels/pn_fir_tau_bwd.py``."""
    return _pnb.pn_fir_tau_bwd(do, q, k, v, tau, peak, arg)


@pn_fir_tau_bwd_op.register_fake
def _(do, q, k, v, tau, peak, arg):
    return _empty_like_heads(q), _empty_like_heads(k), _empty_like_heads(v), torch.empty_like(tau)


def pn_fir_tau_fwd(q, k, v, tau):
    """pn_fir_tau over FIR keys (B, H, N, dh): the output of ``tokenlaw::pn_fir_tau_fwd``."""
    return pn_fir_tau_fwd_op(q, k, v, tau)[0]


def pn_fir_tau_reference(q, k, v, tau):
    s = projections.scores(TORCH, q, fir(TORCH, k))
    return normalisers.pn_tau(TORCH, s, causal_mask(TORCH, s, q.shape[-2]), tau=tau) @ v


def _pn_setup(ctx, inputs, output):
    ctx.mark_non_differentiable(*output[1:])
    ctx.save_for_backward(*inputs, *output[1:])        # the inputs and the row statistics


def _pn_backward(ctx, grad, *_grad_stats):
    return pn_fir_tau_bwd_op(grad, *ctx.saved_tensors)


pn_fir_tau_fwd_op.register_autograd(_pn_backward, setup_context=_pn_setup)

# name -> the forward custom op (what opcheck and torch.compile see)
OPS = {"oattention_fwd": oattention_fwd_op, "sm_fir_fwd": sm_fir_fwd_op, "pn_fir_tau_fwd": pn_fir_tau_fwd_op}
BACKWARD_OPS = {"oattention_fwd": oattention_bwd_op, "sm_fir_fwd": sm_fir_bwd_op, "pn_fir_tau_fwd": pn_fir_tau_bwd_op}


def _first_derivative_only(name: str):
    """The backward of a backward op: a clear refusal (torch's own would say only that no formula is registered)."""
    def backward(ctx, *grads):
        raise NotImplementedError(
            f"tokenlaw::{name}: the Triton kernel has a first derivative only; a second one (double backward: "
            f"create_graph=True and a backward through the gradient, e.g. a gradient penalty, gradgradcheck or "
            f"a Hessian-vector product) is not implemented; compute it on the eager operator (implementation=None)")
    return backward


for _name, _op in BACKWARD_OPS.items():
    _op.register_autograd(_first_derivative_only(_name), setup_context=lambda ctx, inputs, output: None)
