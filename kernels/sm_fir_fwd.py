"""Fused sm_fir forward: causal softmax attention over FIR-smoothed keys (docs/mathematics.md#normalisers).

    S_tj = <q_t, k~_j> / sqrt(dh),  k~_j = sum_{t=0..6} w_t k_{j-t},  o_t = softmax_j<=t(S_t) v

The smoothed keys are never materialised: each key tile is rebuilt in
registers from its own rows plus a 6-row halo (``tiles.fir_key_tile``), then
a standard online softmax runs over the causal key tiles.  Each row also
stores its max m_t and sum l_t (fp32) and the first key at the max
(int32), from which the backward
(``sm_fir_bwd.py``) rebuilds its weights exp(S_tj - m_t) / l_t tile by tile
(not from lse = m + log l, which rounds at the scale of m).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import fir_launch
from .tiles import fir_kv_tile, head_tile, load_rows, store_rows, store_stat


@triton.jit
def sm_fir_fwd_kernel(
    # pointers
    Q, K, V, TAPS, OUT, ROW_MAX, ROW_SUM, ROW_ARG,
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale,
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
    q = load_rows(Q + b * stride_qb + h * stride_qh, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh

    # -- online softmax state, fp32 ------------------------------------------
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    arg = tl.full((BLOCK_M,), -1, dtype=tl.int32)      # first key at the running max

    # -- causal key tiles: FIR keys in registers, scores, rescale, accumulate
    hi = tl.minimum(n_ctx, (pid_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < n_ctx
        k, v = fir_kv_tile(K, V, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd,
                           stride_vn, stride_vd, q.dtype, BLOCK_N, BLOCK_D, N_TAPS, HALO)
        visible = col_ok[None, :] & (offs_n[None, :] <= offs_m[:, None])
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        s_top = tl.where(visible, s, -float("inf"))
        arg = tl.where(tl.max(s_top, axis=1) > m_i, start_n + tl.argmax(s_top, axis=1).to(tl.int32), arg)
        m_new = tl.maximum(m_i, tl.max(tl.where(visible, s, float("-inf")), axis=1))
        m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)     # padding rows see nothing
        alpha = tl.exp(m_i - m_ref)
        e = tl.where(visible, tl.exp(tl.where(visible, s - m_ref[:, None], 0.0)), 0.0)
        l_i = l_i * alpha + tl.sum(e, axis=1)
        acc = acc * alpha[:, None] + tl.dot(e.to(v.dtype), v, input_precision="ieee")
        m_i = m_new

    # -- epilogue: normalise (every real row sees its own key), masked store -
    out = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]
    store_stat(ROW_MAX, m_i, pid_bh, n_ctx, offs_m)
    store_stat(ROW_SUM, l_i, pid_bh, n_ctx, offs_m)
    store_stat(ROW_ARG, arg, pid_bh, n_ctx, offs_m)
    store_rows(OUT + b * stride_ob + h * stride_oh, out, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)


def sm_fir_fwd(q, k, v):
    """Causal softmax attention over FIR keys for q, k, v (B, H, N, dh); returns (out, row_max, row_sum,
    row_arg), the statistics (B, H, N) fp32, fp32, int32."""
    return fir_launch.launch(sm_fir_fwd_kernel, q, k, v, stats=(torch.float32, torch.float32, torch.int32))
