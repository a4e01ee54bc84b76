"""The FIR's transpose for the backward: gradients of the smoothed keys back to the raw keys (docs/mathematics.md#fir).

The forward smooths k~_j = sum_{t=0..6} w_t k_{j-t} (causal), so the
gradient of a raw key collects the gradients of the smoothed keys it fed:

    dk_i = sum_{t=0..6} w_t dk~_{i+t}        (anti-causal: zero past the last token)

One program per key tile reads the tile's rows of dk~ plus the HALO = 6 rows
*after* it (the forward's halo lies before the tile; the transpose's lies
after).  dk~ is (B, H, N, dh) fp32 -- O(N), written by the FIR kernels'
dK/dV pass.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .capabilities import tiles
from .fir_launch import HALO, N_TAPS, taps_tensor
from .tiles import head_tile, store_rows


@triton.jit
def fir_key_grad_kernel(
    # pointers
    DKS, TAPS, DK,
    # sizes
    H, n_ctx, head_dim,
    # strides
    stride_sb, stride_sh, stride_sn, stride_sd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    # meta-parameters
    N_TAPS: tl.constexpr, HALO: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # -- this program's key tile of one (batch, head) ----------------------
    pid_n, pid_bh, b, h, offs_n, offs_d = head_tile(H, BLOCK_N, BLOCK_D)
    start_n = pid_n * BLOCK_N
    d_ok = offs_d[None, :] < head_dim

    # -- read window [start_n, start_n + BLOCK_N + HALO), clipped at the last token
    hi = tl.minimum(start_n + BLOCK_N + HALO, n_ctx)
    rows = DKS + b * stride_sb + h * stride_sh + offs_n[:, None] * stride_sn + offs_d[None, :] * stride_sd
    acc = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    for t in tl.static_range(N_TAPS):
        src = offs_n + t
        g = tl.load(rows + t * stride_sn, mask=(src < hi)[:, None] & d_ok, other=0.0)
        acc += tl.load(TAPS + t) * g

    store_rows(DK + b * stride_kb + h * stride_kh, acc, offs_n, offs_d, n_ctx, head_dim, stride_kn, stride_kd)


def fir_key_grad(dks, dtype):
    """dk = F^T dk~ for smoothed-key gradients ``dks`` (B, H, N, dh) fp32; returns (B, H, N, dh) in ``dtype``."""
    b, h, n, dh = dks.shape
    dk = torch.empty((b, h, n, dh), dtype=dtype, device=dks.device)
    t = tiles(n, dh)
    fir_key_grad_kernel[(triton.cdiv(n, t["BLOCK_N"]), b * h)](
        dks, taps_tensor(dks.device), dk, h, n, dh, *dks.stride(), *dk.stride(),
        N_TAPS=N_TAPS, HALO=HALO, BLOCK_N=t["BLOCK_N"], BLOCK_D=t["BLOCK_D"],
    )
    return dk
