"""Fused sm_fir backward: causal softmax over FIR keys, FlashAttention-2 style (docs/mathematics.md#normalisers).

The forward (``sm_fir_fwd.py``) leaves each row's max m_t, sum l_t and top key.
With P_tj = exp(S_tj - m_t) / l_t (j <= t), S = q k~^T / sqrt(dh) and dO the
incoming gradient:

    dP_tj = dO_t . v_j,  delta_t = sum_j P_tj dP_tj,  ds_tj = P_tj (dP_tj - delta_t),
    dq_t = scale sum_j ds_tj k~_j,  dk~_j = scale sum_t ds_tj q_t,  dv_j = sum_t P_tj dO_t,

and the raw keys' gradient is the FIR's transpose dk = F^T dk~
(``fir_key_grad.py``: each raw key fed the 7 smoothed keys after it).
``sm_fir_bwd_dq_kernel`` owns a query tile and streams its causal key tiles
twice: first for delta, then for dq and the top key's ds (both written for
the other kernel); ``sm_fir_bwd_dkdv_kernel``, launched after it, owns a
key tile and streams the query tiles at or after it.  Both rebuild the
smoothed key tile in registers (``tiles.fir_key_tile``), the weights and dP
with ``sm_fir_tile``; nothing N x N is stored, dk~ is O(N).

delta is summed from the very dP it is subtracted from, not taken from
rowsum(dO . O), and centred on the row's top key a: the dQ kernel first
sweeps dP_ta (from the same dot as every other dP), then
delta'_t = sum_j P_tj (dP_tj - dP_ta), and ds = P ((dP - dP_a) - delta').
In the reals that is P (dP - delta) (sum_j P_tj = 1); in float32 it is
exactly 0 wherever a row's dP are all equal -- every first row, and every
row whose values are equal (null tokens with a large value bias: the true
ds is 0, while P (dP - sum P dP) left ~u |dP| P, which dk = sum_t ds q_t
carried times |q|), as eager autograd's is.

Each row of ds sums to 0 in the reals (softmax ignores a per-row constant),
so dq_t = scale sum_j ds_tj k~_j keeps no multiple of what the keys have in
common: a large key bias (|k~| ~ 13 against a spread of ~6 at the fp32 exp
edge) or a large score offset cancels.  In floating point it cancels only
if the computed ds rows sum to 0: with each ds_tj formed on its own (the
top key's as rest dP_a - rest_dP), a row summed to ~u |dP| (a value bias
makes every dP ~100), and that residue times the common component reached
dq whole -- 29x eager's dq error there.  So, as eager autograd's max shift
does, the row's top key a takes ds_ta = -sum_{j != a} ds_tj, minus the
other keys' terms as computed (in the dot's input dtype); the dQ kernel
adds it as -(sum_{j != a} ds_tj) k~_a, with k~_a picked out of its tile by
a one-hot dot (exact), and stores ds_ta for the dK/dV kernel.  Summing
those small terms also keeps a saturated row's top term accurate, where
dP_a - delta would subtract two nearly equal numbers.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import validate
from .capabilities import tiles
from .fir_key_grad import fir_key_grad
from .fir_launch import HALO, N_TAPS, taps_tensor
from .tiles import fir_kv_tile, head_tile, load_rows, load_stat, store_rows, store_stat, top_key_dp


@triton.jit
def sm_fir_tile(q, do, row_max, inv_sum, K, V, TAPS, offs_m, offs_n, offs_d, start_n, n_ctx, head_dim, sm_scale,
                stride_kn, stride_kd, stride_vn, stride_vd,
                N_TAPS: tl.constexpr, HALO: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """(k~, v, P, dP) of one tile: smoothed keys in registers, P_tj = exp(S_tj - m_t) / l_t on the causal
    in-range entries (0 elsewhere), dP_tj = dO_t . v_j."""
    k, v = fir_kv_tile(K, V, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd, stride_vn, stride_vd,
                       q.dtype, BLOCK_N, BLOCK_D, N_TAPS, HALO)
    visible = (offs_m < n_ctx)[:, None] & (offs_n < n_ctx)[None, :] & (offs_n[None, :] <= offs_m[:, None])
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
    p = tl.where(visible, tl.exp(tl.where(visible, s - row_max[:, None], 0.0)), 0.0) * inv_sum[:, None]
    dp = tl.dot(do, tl.trans(v), input_precision="ieee")
    return k, v, p, dp


@triton.jit
def sm_fir_bwd_dq_kernel(
    # pointers
    Q, K, V, TAPS, DO, ROW_MAX, ROW_SUM, ROW_ARG, DELTA, DP_TOP, TOP_DS, DQ,     # DELTA .. TOP_DS: written here
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale,
    # strides
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_on, stride_od,          # dO
    stride_gb, stride_gh, stride_gn, stride_gd,          # dq
    # meta-parameters
    N_TAPS: tl.constexpr, HALO: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # -- this program's query tile of one (batch, head): q, its incoming gradient, row statistics --
    pid_m, pid_bh, b, h, offs_m, offs_d = head_tile(H, BLOCK_M, BLOCK_D)
    q = load_rows(Q + b * stride_qb + h * stride_qh, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
    do = load_rows(DO + b * stride_ob + h * stride_oh, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)
    row_max = load_stat(ROW_MAX, pid_bh, n_ctx, offs_m, 0.0)
    inv_sum = 1.0 / load_stat(ROW_SUM, pid_bh, n_ctx, offs_m, 1.0)
    arg = load_stat(ROW_ARG, pid_bh, n_ctx, offs_m, -1)
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh
    hi = tl.minimum(n_ctx, (pid_m + 1) * BLOCK_M)

    # -- sweep 0: dP_ta, the row's top key's dP, from the same dot as every other dP --------
    dp_top = top_key_dp(do, V, arg, offs_d, hi, n_ctx, head_dim, stride_vn, stride_vd, BLOCK_M, BLOCK_N)

    # -- sweep 1: delta_t = sum_j P_tj (dP_tj - dP_ta), from the dP that ds subtracts it from ---
    delta = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k, v, p, dp = sm_fir_tile(q, do, row_max, inv_sum, K, V, TAPS, offs_m, offs_n, offs_d, start_n, n_ctx, head_dim,
                                  sm_scale, stride_kn, stride_kd, stride_vn, stride_vd, N_TAPS, HALO, BLOCK_N, BLOCK_D)
        delta += tl.sum(p * (dp - dp_top[:, None]), axis=1)
    store_stat(DELTA, delta, pid_bh, n_ctx, offs_m)
    store_stat(DP_TOP, dp_top, pid_bh, n_ctx, offs_m)

    # -- sweep 2: ds = P (dP - delta) off the top key, dq; the top key's ds is minus the
    #    row's others (each row of ds sums to 0), added at the end with its key k~_a
    dq = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    ds_rest = tl.zeros((BLOCK_M,), dtype=tl.float32)
    k_top = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k, v, p, dp = sm_fir_tile(q, do, row_max, inv_sum, K, V, TAPS, offs_m, offs_n, offs_d, start_n, n_ctx, head_dim,
                                  sm_scale, stride_kn, stride_kd, stride_vn, stride_vd, N_TAPS, HALO, BLOCK_N, BLOCK_D)
        at_top = offs_n[None, :] == arg[:, None]
        ds = tl.where(at_top, 0.0, p * ((dp - dp_top[:, None]) - delta[:, None])).to(k.dtype)   # as the dot sees it
        dq += tl.dot(ds, k, input_precision="ieee")
        ds_rest += tl.sum(ds.to(tl.float32), axis=1)
        k_top += tl.dot(at_top.to(k.dtype), k, input_precision="ieee")      # one-hot: exactly k~_a
    dq -= ds_rest[:, None] * k_top
    store_stat(TOP_DS, -ds_rest, pid_bh, n_ctx, offs_m)

    dq = dq * sm_scale
    store_rows(DQ + b * stride_gb + h * stride_gh, dq, offs_m, offs_d, n_ctx, head_dim, stride_gn, stride_gd)


@triton.jit
def sm_fir_bwd_dkdv_kernel(
    # pointers
    Q, K, V, TAPS, DO, ROW_MAX, ROW_SUM, ROW_ARG, DELTA, DP_TOP, TOP_DS, DKS, DV,
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale,
    # strides
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_on, stride_od,          # dO
    stride_gb, stride_gh, stride_gn, stride_gd,          # dk~ (fp32), dv
    # meta-parameters
    N_TAPS: tl.constexpr, HALO: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # -- this program's key tile of one (batch, head) ----------------------
    pid_n, pid_bh, b, h, offs_n, offs_d = head_tile(H, BLOCK_N, BLOCK_D)
    start_n = pid_n * BLOCK_N
    Q += b * stride_qb + h * stride_qh
    DO += b * stride_ob + h * stride_oh
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh

    # -- query tiles at or after this key tile (causal) ---------------------
    dk = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    for start_m in range((start_n // BLOCK_M) * BLOCK_M, n_ctx, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q = load_rows(Q, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
        do = load_rows(DO, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)
        row_max = load_stat(ROW_MAX, pid_bh, n_ctx, offs_m, 0.0)
        inv_sum = 1.0 / load_stat(ROW_SUM, pid_bh, n_ctx, offs_m, 1.0)
        arg = load_stat(ROW_ARG, pid_bh, n_ctx, offs_m, -1)
        delta = load_stat(DELTA, pid_bh, n_ctx, offs_m, 0.0)
        dp_top = load_stat(DP_TOP, pid_bh, n_ctx, offs_m, 0.0)
        top_ds = load_stat(TOP_DS, pid_bh, n_ctx, offs_m, 0.0)
        k, v, p, dp = sm_fir_tile(q, do, row_max, inv_sum, K, V, TAPS, offs_m, offs_n, offs_d, start_n, n_ctx, head_dim,
                                  sm_scale, stride_kn, stride_kd, stride_vn, stride_vd, N_TAPS, HALO, BLOCK_N, BLOCK_D)
        dv += tl.dot(tl.trans(p).to(do.dtype), do, input_precision="ieee")
        ds = tl.where(offs_n[None, :] == arg[:, None], top_ds[:, None], p * ((dp - dp_top[:, None]) - delta[:, None]))
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision="ieee")

    dk = dk * sm_scale
    store_rows(DKS + b * stride_gb + h * stride_gh, dk, offs_n, offs_d, n_ctx, head_dim, stride_gn, stride_gd)
    store_rows(DV + b * stride_gb + h * stride_gh, dv, offs_n, offs_d, n_ctx, head_dim, stride_gn, stride_gd)


def sm_fir_bwd(do, q, k, v, row_max, row_sum, row_arg):
    """Gradients (dq, dk, dv) of sm_fir for the incoming gradient ``do``; the row statistics from the forward."""
    b, h, n, dh = validate.heads_tensors(q=q, k=k, v=v, do=do)
    delta, dp_top, top_ds = (torch.empty((b, h, n), dtype=torch.float32, device=q.device) for _ in range(3))
    dq, dv = (torch.empty((b, h, n, dh), dtype=q.dtype, device=q.device) for _ in range(2))
    dks = torch.empty((b, h, n, dh), dtype=torch.float32, device=q.device)
    t = tiles(n, dh)
    common = (h, n, dh, dh ** -0.5, *q.stride(), *k.stride(), *v.stride(), *do.stride(), *dq.stride())
    meta = dict(N_TAPS=N_TAPS, HALO=HALO, **t)
    taps = taps_tensor(q.device)
    sm_fir_bwd_dq_kernel[(triton.cdiv(n, t["BLOCK_M"]), b * h)](q, k, v, taps, do, row_max, row_sum, row_arg, delta, dp_top, top_ds, dq, *common, **meta)
    sm_fir_bwd_dkdv_kernel[(triton.cdiv(n, t["BLOCK_N"]), b * h)](q, k, v, taps, do, row_max, row_sum, row_arg, delta, dp_top, top_ds, dks, dv,
                                                                  *common, **meta)
    return dq, fir_key_grad(dks, k.dtype), dv
