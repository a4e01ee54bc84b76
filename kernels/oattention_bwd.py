"""Fused OAttention backward, FlashAttention-2 style: nothing N x N is stored (docs/mathematics.md#oattention).

The forward (``oattention_fwd.py``) leaves two fp32 row statistics, the
log-space max M_i and the denominator den_i (lse_i = M_i + log den_i =
log(eps_den + sum_j m_ij p_j exp(s_ij)) is never formed: in fp32 it would
round at the scale of M).  With
y_i = sum_j P_ij v_j the un-gated output (O_i = p_i y_i) and

    P_ij = exp(s_ij + log(m_ij p_j) - M_i) / den_i   (active: m_ij p_j > 0; else 0)
    E_ij = exp(s_ij - M_i) / den_i = P_ij / p_j     (d P_ij / d p_j on active entries)

the gradients, for dO the incoming gradient, are

    dy_i   = p_i dO_i,                dP_ij = dy_i . v_j,
    delta_i = dy_i . y_i = sum_j P_ij dP_ij   (one fp32 per row),
    ds_ij  = P_ij (dP_ij - delta_i),   dq_i = scale sum_j ds_ij k_j,   dk_j = scale sum_i ds_ij q_i,
    dv_j   = sum_i P_ij dy_i,
    dp_j   = (sum_i P_ij (dP_ij - delta_i)) / p_j     (as a source: through its mass)
           + sum_h dO_i . y_i                          (as a receiver: through the gate),

summed over heads (p is shared by the heads).  eps_den only makes the
weights sum below 1; it is inside den and has no term of its own.  Inactive
entries (masked, causal, null or padding sources) are zeroed by ``where``
before and after ``exp``, so they get exactly zero gradient -- the same
convention as the eager operator, whose ``where`` cuts them from autograd.

Two kernels, each owning the tile it writes (no atomics: deterministic):
``oattention_bwd_dq_kernel`` streams the key tiles of a query tile twice --
first for delta, which it writes for the other kernel, then for dq and y
(for the receiver gate's gradient); ``oattention_bwd_dkdv_kernel``, launched
after it, streams query tiles for a key tile (dk, dv and the sources' dp).
Both rebuild P, E and dP with ``oattention_tile``.

delta is not FlashAttention-2's rowsum(dO . O): it is summed from the very
dP values it is subtracted from.  Where one source carries a row's weight,
dP_ij - delta_i is 0 in the reals; built from the same dP it cancels as in
eager autograd, while rowsum(dO . O) rounds differently and leaves
u |dO| |v| of noise in a gradient that should vanish (found by the
gradient_agreement search at n = 1).  The price is two more dots per tile
in the first sweep; O is not saved.  For the same reason, at the row's top
source a (stored by the forward) dP - delta is evaluated as
rest dP_a - rest_dP, with rest = e_i + sum_{j != a} P_ij (e_i =
exp(log eps_den - M_i) / den_i the share eps_den takes; P_a + rest = 1 in
the reals) and rest_dP = sum_{j != a} P_ij dP_ij: small terms only, where
dP_a - delta = dP_a (1 - P_a) - ... would lose them to cancellation in a
saturated row (``tiles.centred``).

ds itself takes that top term in another form.  Each row of ds sums to
e_i delta_i in the reals (0 but for eps_den's share), so
dq_i = scale sum_j ds_ij k_j keeps almost no multiple of what the keys have
in common -- which can dwarf their spread (a large key bias: |k| 576
against a spread of 0.07 in the 30-example search's case).  It cancels in
floating point only if the computed row sums to e_i delta_i: formed on its
own, the top term left a residue ~u |P_a (dP_a - delta)| that reached dq
times |k| (6x eager's dq error there).  So, as eager autograd's max shift
does, the top source takes ds_ia = e_i delta_i - sum_{j != a} ds_ij, from
the other terms as computed (in the dot's input dtype); the dQ kernel adds
it with k_a (picked out of its tile by a one-hot dot: exact) and stores it
for the dK/dV kernel.  The presence gradient keeps ``centred``.

A source's presence gradient is summed as sum_i P_ij (dP_ij - delta_i) and
divided by p_j once, at the end, never as sum_i E_ij (...): E_ij <= 1 / p_j
is the derivative's size, and for a subnormal p_j (a near-null token, 1e-40
in fp32) it overflows to inf while the gradient itself, E times a
(dP - delta) that is 0 up to the rest of the row, is finite -- the
30-example search found dp_j = -inf where eager autograd (which divides
d log p / d p = 1 / p last) had ~1e37.  P_ij <= 1 is in range; so is the
quotient wherever the gradient is.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from . import validate
from .capabilities import tiles
from .oattention_fwd import presence, tile_mass
from .tiles import centred, head_tile, load_rows, load_stat, store_rows, store_stat


@triton.jit
def oattention_tile(q, do, p_rcv, row_max, inv_den, K, V, P, MASK, b, offs_m, offs_n, offs_d, n_ctx, head_dim, sm_scale,
                    stride_kn, stride_kd, stride_vn, stride_vd, stride_pb, stride_pn, stride_mb, stride_mi, stride_mj,
                    HAS_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr):
    """(k, v, s, P, dP) of one (rows, keys) tile, rebuilt from the scores s and the rows' M, den (module docstring)."""
    k = load_rows(K, offs_n, offs_d, n_ctx, head_dim, stride_kn, stride_kd)
    v = load_rows(V, offs_n, offs_d, n_ctx, head_dim, stride_vn, stride_vd)
    mass = tile_mass(P, MASK, b, offs_m, offs_n, offs_m < n_ctx, offs_n < n_ctx, stride_pb, stride_pn,
                     stride_mb, stride_mi, stride_mj, HAS_MASK, IS_CAUSAL)
    active = mass > 0.0
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
    a = s + tl.log(tl.where(active, mass, 1.0))
    prob = tl.where(active, tl.exp(tl.where(active, a - row_max[:, None], 0.0)), 0.0) * inv_den[:, None]
    # dP_ij = dy_i . v_j with dy = p dO (the receiver gate)
    dp = tl.dot(do, tl.trans(v), input_precision="ieee") * p_rcv[:, None]
    return k, v, s, prob, dp


@triton.jit
def oattention_bwd_dq_kernel(
    # pointers
    Q, K, V, P, MASK, DO, ROW_MAX, ROW_DEN, ROW_ARG, DELTA, REST, REST_DP, TOP_DS, DQ, DP_RCV,   # DELTA .. TOP_DS: written
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale, log_eps,
    # strides
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_pb, stride_pn,
    stride_mb, stride_mi, stride_mj,
    stride_ob, stride_oh, stride_on, stride_od,          # dO
    stride_gb, stride_gh, stride_gn, stride_gd,          # dq, dk, dv
    # meta-parameters
    HAS_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # -- this program's query tile of one (batch, head): q, its incoming gradient, row statistics --
    pid_m, pid_bh, b, h, offs_m, offs_d = head_tile(H, BLOCK_M, BLOCK_D)
    q = load_rows(Q + b * stride_qb + h * stride_qh, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
    do = load_rows(DO + b * stride_ob + h * stride_oh, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)
    p_rcv = presence(P, b, offs_m, n_ctx, stride_pb, stride_pn)
    row_max = load_stat(ROW_MAX, pid_bh, n_ctx, offs_m, 0.0)
    inv_den = 1.0 / load_stat(ROW_DEN, pid_bh, n_ctx, offs_m, 1.0)
    arg = load_stat(ROW_ARG, pid_bh, n_ctx, offs_m, -1)
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh
    hi = n_ctx
    if IS_CAUSAL:
        hi = tl.minimum(n_ctx, (pid_m + 1) * BLOCK_M)

    # -- sweep 1: delta_i = sum_j P_ij dP_ij from the dP that ds subtracts it from, split at the
    #    row's top source a: rest = e + sum_{j != a} P_ij, rest_dp = sum_{j != a} P_ij dP_ij
    share = tl.exp(log_eps - row_max) * inv_den                    # eps_den's share e
    rest = share
    rest_dp = tl.zeros((BLOCK_M,), dtype=tl.float32)
    top_dp = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k, v, s, prob, dp = oattention_tile(q, do, p_rcv, row_max, inv_den, K, V, P, MASK, b, offs_m, offs_n, offs_d, n_ctx,
                                               head_dim, sm_scale, stride_kn, stride_kd, stride_vn, stride_vd,
                                               stride_pb, stride_pn, stride_mb, stride_mi, stride_mj,
                                               HAS_MASK, IS_CAUSAL)
        at_top = offs_n[None, :] == arg[:, None]
        rest += tl.sum(tl.where(at_top, 0.0, prob), axis=1)
        rest_dp += tl.sum(tl.where(at_top, 0.0, prob * dp), axis=1)
        top_dp += tl.sum(tl.where(at_top, prob * dp, 0.0), axis=1)
    delta = rest_dp + top_dp
    store_stat(DELTA, delta, pid_bh, n_ctx, offs_m)
    store_stat(REST, rest, pid_bh, n_ctx, offs_m)
    store_stat(REST_DP, rest_dp, pid_bh, n_ctx, offs_m)

    # -- sweep 2: ds = P (dP - delta) off the top source, dq; y = sum_j P_ij v_j for the gate;
    #    the top's ds is e delta minus the row's others, added at the end with its key k_a
    dq = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    y = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    ds_rest = tl.zeros((BLOCK_M,), dtype=tl.float32)
    k_top = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k, v, s, prob, dp = oattention_tile(q, do, p_rcv, row_max, inv_den, K, V, P, MASK, b, offs_m, offs_n, offs_d, n_ctx,
                                               head_dim, sm_scale, stride_kn, stride_kd, stride_vn, stride_vd,
                                               stride_pb, stride_pn, stride_mb, stride_mi, stride_mj,
                                               HAS_MASK, IS_CAUSAL)
        at_top = offs_n[None, :] == arg[:, None]
        ds = tl.where(at_top, 0.0, prob * (dp - delta[:, None])).to(k.dtype)   # summed as the dot sees it
        dq += tl.dot(ds, k, input_precision="ieee")
        ds_rest += tl.sum(ds.to(tl.float32), axis=1)
        k_top += tl.dot(at_top.to(k.dtype), k, input_precision="ieee")         # one-hot: exactly k_a
        y += tl.dot(prob.to(v.dtype), v, input_precision="ieee")
    top_ds = tl.where(arg >= 0, share * delta - ds_rest, 0.0)
    dq += top_ds[:, None] * k_top
    store_stat(TOP_DS, top_ds, pid_bh, n_ctx, offs_m)

    # -- epilogue: dq, and the receiver gate's gradient dO_i . y_i -----------
    dq = dq * sm_scale
    store_rows(DQ + b * stride_gb + h * stride_gh, dq, offs_m, offs_d, n_ctx, head_dim, stride_gn, stride_gd)
    store_stat(DP_RCV, tl.sum(do.to(tl.float32) * y, axis=1), pid_bh, n_ctx, offs_m)


@triton.jit
def oattention_bwd_dkdv_kernel(
    # pointers
    Q, K, V, P, MASK, DO, ROW_MAX, ROW_DEN, ROW_ARG, DELTA, REST, REST_DP, TOP_DS, DK, DV, DP_SRC,
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale, log_eps,
    # strides
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_pb, stride_pn,
    stride_mb, stride_mi, stride_mj,
    stride_ob, stride_oh, stride_on, stride_od,          # dO
    stride_gb, stride_gh, stride_gn, stride_gd,          # dq, dk, dv
    # meta-parameters
    HAS_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # -- this program's key tile of one (batch, head) ----------------------
    pid_n, pid_bh, b, h, offs_n, offs_d = head_tile(H, BLOCK_N, BLOCK_D)
    Q += b * stride_qb + h * stride_qh
    DO += b * stride_ob + h * stride_oh
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh

    dk = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    dp_src = tl.zeros((BLOCK_N,), dtype=tl.float32)
    p_src = presence(P, b, offs_n, n_ctx, stride_pb, stride_pn)
    # causal: only receivers i >= j see this tile; start at the query tile holding its first key
    lo = 0
    if IS_CAUSAL:
        lo = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M
    for start_m in range(lo, n_ctx, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q = load_rows(Q, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
        do = load_rows(DO, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)
        p_rcv = presence(P, b, offs_m, n_ctx, stride_pb, stride_pn)
        row_max = load_stat(ROW_MAX, pid_bh, n_ctx, offs_m, 0.0)
        inv_den = 1.0 / load_stat(ROW_DEN, pid_bh, n_ctx, offs_m, 1.0)
        arg = load_stat(ROW_ARG, pid_bh, n_ctx, offs_m, -1)
        delta = load_stat(DELTA, pid_bh, n_ctx, offs_m, 0.0)
        rest = load_stat(REST, pid_bh, n_ctx, offs_m, 0.0)
        rest_dp = load_stat(REST_DP, pid_bh, n_ctx, offs_m, 0.0)
        top_ds = load_stat(TOP_DS, pid_bh, n_ctx, offs_m, 0.0)
        k, v, s, prob, dp = oattention_tile(q, do, p_rcv, row_max, inv_den, K, V, P, MASK, b, offs_m, offs_n, offs_d, n_ctx,
                                               head_dim, sm_scale, stride_kn, stride_kd, stride_vn, stride_vd,
                                               stride_pb, stride_pn, stride_mb, stride_mi, stride_mj,
                                               HAS_MASK, IS_CAUSAL)

        # dv_j += sum_i P_ij p_i dO_i;  ds = P (dP - delta) (the top's from the dQ kernel);  dk_j += sum_i ds_ij q_i
        dv += tl.dot(tl.trans(prob * p_rcv[:, None]).to(do.dtype), do, input_precision="ieee")
        at_top = offs_n[None, :] == arg[:, None]
        g = centred(dp, at_top, delta, rest, rest_dp)
        ds = tl.where(at_top, top_ds[:, None], prob * g)
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision="ieee")
        # the sources' presence: d P_ij / d p_j = P_ij / p_j on active entries (0 elsewhere, like P);
        # summed as P g and divided by p_j once, after the loop (P <= 1: no overflow on the way)
        dp_src += tl.sum(prob * g, axis=0)

    dk = dk * sm_scale
    dp_src = tl.where(p_src > 0.0, dp_src / tl.where(p_src > 0.0, p_src, 1.0), 0.0)
    store_rows(DK + b * stride_gb + h * stride_gh, dk, offs_n, offs_d, n_ctx, head_dim, stride_gn, stride_gd)
    store_rows(DV + b * stride_gb + h * stride_gh, dv, offs_n, offs_d, n_ctx, head_dim, stride_gn, stride_gd)
    store_stat(DP_SRC, dp_src, pid_bh, n_ctx, offs_n)


def oattention_bwd(do, q, k, v, p, mask, row_max, row_den, row_arg, *, eps_den, causal=False):
    """Gradients (dq, dk, dv, dp) of OAttention for the incoming gradient ``do`` (B, H, N, dh).

    ``row_max``, ``row_den``, ``row_arg`` are what ``oattention_fwd`` returned for the same inputs; ``p``
    and ``mask`` are the forward's (mask: None or (1|B, N, N)).
    dq, dk, dv come in q's dtype (fp32 accumulation), dp (B, N) in p's.
    """
    b, h, n, dh = validate.heads_tensors(q=q, k=k, v=v, do=do)      # the forward's checks, and dO's
    p32 = p.float()
    delta, rest, rest_dp, top_ds = (torch.empty((b, h, n), dtype=torch.float32, device=q.device) for _ in range(4))
    dq, dk, dv = (torch.empty((b, h, n, dh), dtype=q.dtype, device=q.device) for _ in range(3))
    dp_rcv = torch.empty((b, h, n), dtype=torch.float32, device=q.device)
    dp_src = torch.empty((b, h, n), dtype=torch.float32, device=q.device)
    t = tiles(n, dh)
    m_arg = mask if mask is not None else dq          # unused pointer when HAS_MASK is False
    m_strides = (mask.stride(0) if mask.shape[0] > 1 else 0, mask.stride(1), mask.stride(2)) \
        if mask is not None else (0, 0, 0)
    common = (h, n, dh, dh ** -0.5, math.log(eps_den), *q.stride(), *k.stride(), *v.stride(), *p32.stride(), *m_strides,
              *do.stride(), *dq.stride())      # dq, dk, dv: one contiguous layout
    meta = dict(HAS_MASK=mask is not None, IS_CAUSAL=bool(causal), **t)
    oattention_bwd_dq_kernel[(triton.cdiv(n, t["BLOCK_M"]), b * h)](
        q, k, v, p32, m_arg, do, row_max, row_den, row_arg, delta, rest, rest_dp, top_ds, dq, dp_rcv, *common, **meta)
    oattention_bwd_dkdv_kernel[(triton.cdiv(n, t["BLOCK_N"]), b * h)](
        q, k, v, p32, m_arg, do, row_max, row_den, row_arg, delta, rest, rest_dp, top_ds, dk, dv, dp_src, *common, **meta)
    dp = (dp_rcv + dp_src).sum(1)                    # p is shared by the heads
    return dq, dk, dv, dp.to(p.dtype)
