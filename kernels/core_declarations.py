"""tokenlaw's own Triton kernels at the attention core, declared with ``declare_core`` (opt-in):

    TRITON_INTERPRET=1 tokenlaw --operators tokenlaw.kernels.core_declarations check

``triton_oattention``: the fused OAttention forward and backward (``kernels/oattention_fwd.py``,
``kernels/oattention_bwd.py``) through their custom ops (``kernels/ops.py``) with every presence 1 and
eps_den = 1e-30, which makes OAttention the softmax core: out_i = sum_j m_ij exp(s_ij) v_j / (eps_den +
sum_j m_ij exp(s_ij)), s = q k^T / sqrt(E), where eps_den moves a row by a relative eps_den e^(-max_j s_ij),
below float32's rounding unless every score the row sees is below log(1e-30) + log(u) = -85.  What the
kernel takes is what is declared: one length N (L = S: ``square``), Hq = Hkv, E = Ev, no ``scale`` (it
applies 1 / sqrt(E)), a boolean (L, S) mask, top-left causality, a fully masked row 0; float32 only (the
kernels have no float64 path; bfloat16 is not drawn at the core, and under the interpreter it is not
runnable: ``capabilities.BF16_INTERPRETER_BUG``, triton-lang/triton#11584).

The two FIR kernels (``sm_fir``, ``pn_fir_tau``) smooth the keys with a fixed 7-tap filter over the token axis
before the scores: they are not the core formula for any setting of their arguments, so they are not declared
here (their own operators judge them: ``tokenlaw check --backend triton``).

Without a CUDA GPU and without TRITON_INTERPRET=1 (set before triton is first imported), every row of the
declaration is "not runnable here" with that reason.
"""
from __future__ import annotations

import torch

from tokenlaw.operators.core import declare_core

from . import ops
from .capabilities import interpreting

EPS_DEN = 1e-30


def _why_not() -> str | None:
    if interpreting() or torch.cuda.is_available():
        return None
    return "no CUDA GPU and TRITON_INTERPRET is not set (set TRITON_INTERPRET=1 to run the kernel interpreted on CPU)"


def _oattention(q, k, v, *, attn_mask=None, is_causal=False):
    """The OAttention kernel with presence 1 and eps_den 1e-30 (module docstring); q, k, v on the kernel's device."""
    device = torch.device("cuda" if torch.cuda.is_available() and not interpreting() else "cpu")
    p = torch.ones(q.shape[0], q.shape[2], dtype=q.dtype, device=device)
    mask = None if attn_mask is None else attn_mask.to(device=device, dtype=q.dtype)
    out = ops.oattention_fwd(q.to(device), k.to(device), v.to(device), p, mask, EPS_DEN, bool(is_causal))
    return out.to(q.device)


triton_oattention = declare_core(
    "triton_oattention", _oattention, not_runnable=_why_not(), square=True, gqa=False, distinct_ev=False,
    dtypes=("float32",), conventions=dict(mask_kinds=("bool",), mask_shapes=("square",)))
