"""Fused pn_fir_tau forward: calibrated power normalisation over FIR keys, no exp or log (docs/mathematics.md#pn-fir-tau).

    r_tj = max(S_tj - tau, 0) (j <= t),  m_t = max_j r_tj,
    o_t  = g(m_t) * sum_j r_tj^10 v_j / sum_j r_tj^10,   g(m) = m / (1 + m)

Online power normalisation: the sums are kept relative to the running peak
m (u = (r / m)^10 <= 1, so nothing overflows).  When a tile raises the peak
from m_old to m_new the sums are rescaled by (m_old / m_new)^10 -- the
power analogue of flash attention's exp(m_old - m_new), computed by four
multiplications.  A key tile in which no score exceeds tau contributes
nothing and is skipped (no value load, no second dot).  A row that never
sees a positive score keeps m = 0, gate 0 and output exactly 0 (silence).

For the backward (``pn_fir_tau_bwd.py``) each row stores its peak m and the
first key that attains it (int32, -1 for a silent row): the gate's
derivative flows to that one score, and every weight is rebuilt from m tile
by tile (the backward recomputes the mass against m exactly).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import fir_launch, validate
from .tiles import fir_key_tile, head_tile, load_rows, power10, store_rows, store_stat


@triton.jit
def pn_fir_tau_fwd_kernel(
    # pointers
    Q, K, V, TAPS, OUT, PEAK, ARG,
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale, tau,
    # strides
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_on, stride_od,
    # meta-parameters
    N_TAPS: tl.constexpr, HALO: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # -- this program's query tile of one (batch, head) --------------------
    pid_m, pid_bh, b, h, offs_m, offs_d = head_tile(H, BLOCK_M, BLOCK_D)
    row_ok = offs_m < n_ctx
    q = load_rows(Q + b * stride_qb + h * stride_qh, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh

    # -- running peak and peak-relative sums, fp32 ---------------------------
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    arg = tl.full((BLOCK_M,), -1, dtype=tl.int32)      # first key at the peak (-1: silent so far)

    hi = tl.minimum(n_ctx, (pid_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < n_ctx
        k = fir_key_tile(K, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd,
                         BLOCK_N, BLOCK_D, N_TAPS, HALO)
        visible = row_ok[:, None] & col_ok[None, :] & (offs_n[None, :] <= offs_m[:, None])
        s = tl.dot(q, tl.trans(k.to(q.dtype)), input_precision="ieee") * sm_scale
        r = tl.where(visible, tl.maximum(s - tau, 0.0), 0.0)

        # -- skip a silent tile: no score above tau anywhere in it -----------
        live = tl.max(tl.max(r, axis=1), axis=0) > 0.0
        if live:
            tile_peak = tl.max(r, axis=1)
            arg = tl.where(tile_peak > m_i, start_n + tl.argmax(r, axis=1).to(tl.int32), arg)
            m_new = tl.maximum(m_i, tl.max(r, axis=1))
            safe = tl.where(m_new > 0.0, m_new, 1.0)
            scale = power10(m_i / safe)               # (m_old / m_new)^10; 0 while the row was silent
            u = power10(r / safe[:, None])            # (r / m_new)^10 in [0, 1]
            v = load_rows(V, offs_n, offs_d, n_ctx, head_dim, stride_vn, stride_vd)
            l_i = l_i * scale + tl.sum(u, axis=1)
            acc = acc * scale[:, None] + tl.dot(u.to(v.dtype), v, input_precision="ieee")
            m_i = m_new

    # -- epilogue: normalise, peak silence gate g = m / (1 + m) ---------------
    gate = m_i / (1.0 + m_i)
    out = gate[:, None] * (acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None])
    store_stat(PEAK, m_i, pid_bh, n_ctx, offs_m)
    store_stat(ARG, arg, pid_bh, n_ctx, offs_m)
    store_rows(OUT + b * stride_ob + h * stride_oh, out, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)


def pn_fir_tau_fwd(q, k, v, tau):
    """pn_fir_tau over FIR keys for q, k, v (B, H, N, dh) and threshold ``tau``.

    Returns (out, peak, arg): out (B, H, N, dh) and the row statistics
    (B, H, N) the backward needs (fp32 and int32).
    """
    return fir_launch.launch(pn_fir_tau_fwd_kernel, q, k, v, validate.scalar(tau, "tau"),
                             stats=(torch.float32, torch.int32))
