"""Launching the causal FIR-key kernels (sm_fir_fwd, pn_fir_tau_fwd): one wrapper for both."""
from __future__ import annotations

import torch
import triton

from tokenlaw.operators.fir import TAPS

from . import validate
from .capabilities import tiles

N_TAPS = len(TAPS)
HALO = N_TAPS - 1      # rows before a key tile that its FIR reads


def taps_tensor(device) -> torch.Tensor:
    """The 7 half-Gaussian taps (docs/mathematics.md#fir) as fp32 on ``device``."""
    return torch.tensor(TAPS, dtype=torch.float32, device=device)


def launch(kernel, q, k, v, *scalars, stats=(), halo=None, **meta):
    """Validate q, k, v (B, H, N, dh), allocate the output and launch ``kernel`` over (query tiles, B*H).

    ``stats``: the dtypes of the per-row statistics the kernel stores for
    its backward, each a contiguous (B, H, N) tensor.  Returns (out, *stats).
    """
    b, h, n, dh = validate.heads_tensors(q=q, k=k, v=v)
    out = torch.empty((b, h, n, dh), dtype=q.dtype, device=q.device)
    rows = [torch.empty((b, h, n), dtype=dt, device=q.device) for dt in stats]
    t = tiles(n, dh)
    grid = (triton.cdiv(n, t["BLOCK_M"]), b * h)
    kernel[grid](
        q, k, v, taps_tensor(q.device), out, *rows,
        h, n, dh, dh ** -0.5, *scalars,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(),
        N_TAPS=N_TAPS, HALO=HALO if halo is None else halo, **meta, **t,
    )
    return (out, *rows)
