"""Fused OAttention forward: presence-weighted online softmax (docs/mathematics.md#oattention).

    out_i = p_i * sum_j m_ij p_j exp(s_ij) v_j / (eps_den + sum_j m_ij p_j exp(s_ij))

One program owns BLOCK_M receivers of one (batch, head) and streams the key
tiles once, flash-attention style, in log space like the eager operator
(``operators/oattention.py``): p_j exp(s_ij) = exp(s_ij + log p_j).

* the running maximum M_i is taken over the *active* exponents
  a_ij = s_ij + log(m_ij p_j) (m_ij p_j > 0) and starts at log(eps_den): a
  null token's key, however large, never enters it, so it cannot underflow
  the active tokens' weights, and a near-null (subnormal) presence cannot
  make the denominator subnormal;
* inactive entries are replaced before log/exp see them and zeroed after,
  so there is no log 0 and no 0 * inf;
* eps_den is rescaled like the sums: den = exp(log(eps_den) - M) + l.  The
  term that set M contributes exactly 1, so den >= 1: it never overflows or
  underflows.  A row with no active source keeps M = log(eps_den) and gets
  num = 0, den = 1: exactly 0.

For the backward (``oattention_bwd.py``) the kernel also stores three
statistics per row, the log-space max M_i and the denominator den_i >= 1
(fp32), and the first active source at the max (int32, -1 if none exceeds
log eps_den):
the backward rebuilds every weight as exp(a_ij - M_i) / den_i tile by tile,
so nothing N x N is ever stored.  (Not lse = M + log den: in fp32 that sum
rounds at the scale of M, a relative error of u |M| in every weight.)
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from . import validate
from .capabilities import tiles
from .tiles import head_tile, load_rows, store_rows, store_stat


@triton.jit
def presence(P, b, offs, n_ctx, stride_pb, stride_pn):
    """The presences p of tokens ``offs`` of batch ``b``: 0 past n_ctx."""
    return tl.load(P + b * stride_pb + offs * stride_pn, mask=offs < n_ctx, other=0.0)


@triton.jit
def tile_mass(P, MASK, b, offs_m, offs_n, row_ok, col_ok, stride_pb, stride_pn, stride_mb, stride_mi, stride_mj,
              HAS_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr):
    """mass_ij = m_ij p_j for a (rows, keys) tile: zero for padding, masked, causal-future and null sources."""
    p_src = tl.load(P + b * stride_pb + offs_n * stride_pn, mask=col_ok, other=0.0)
    mass = tl.where(row_ok[:, None] & col_ok[None, :], p_src[None, :], 0.0)
    if HAS_MASK:
        vis = tl.load(MASK + b * stride_mb + offs_m[:, None] * stride_mi + offs_n[None, :] * stride_mj,
                      mask=row_ok[:, None] & col_ok[None, :], other=0)
        mass = tl.where(vis != 0, mass, 0.0)
    if IS_CAUSAL:
        mass = tl.where(offs_n[None, :] <= offs_m[:, None], mass, 0.0)
    return mass


@triton.jit
def oattention_fwd_kernel(
    # pointers
    Q, K, V, P, MASK, OUT, ROW_MAX, ROW_DEN, ROW_ARG,
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale, log_eps,
    # strides
    stride_qb, stride_qh, stride_qn, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_pb, stride_pn,
    stride_mb, stride_mi, stride_mj,
    stride_ob, stride_oh, stride_on, stride_od,
    # meta-parameters
    HAS_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # -- this program's receiver tile of one (batch, head): queries and presence --
    pid_m, pid_bh, b, h, offs_m, offs_d = head_tile(H, BLOCK_M, BLOCK_D)
    row_ok = offs_m < n_ctx
    q = load_rows(Q + b * stride_qb + h * stride_qh, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
    p_rcv = presence(P, b, offs_m, n_ctx, stride_pb, stride_pn)
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh

    # -- running max (from log eps_den) over active exponents, running sums --
    m_i = tl.full((BLOCK_M,), 0.0, dtype=tl.float32) + log_eps
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    arg = tl.full((BLOCK_M,), -1, dtype=tl.int32)      # first active source at the running max

    hi = n_ctx
    if IS_CAUSAL:
        hi = tl.minimum(n_ctx, (pid_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < n_ctx
        k = load_rows(K, offs_n, offs_d, n_ctx, head_dim, stride_kn, stride_kd)
        v = load_rows(V, offs_n, offs_d, n_ctx, head_dim, stride_vn, stride_vd)
        mass = tile_mass(P, MASK, b, offs_m, offs_n, row_ok, col_ok, stride_pb, stride_pn, stride_mb, stride_mi,
                         stride_mj, HAS_MASK, IS_CAUSAL)
        active = mass > 0.0

        # exponents a = s + log mass; the running max only ever sees active ones
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        a = s + tl.log(tl.where(active, mass, 1.0))
        a_top = tl.where(active, a, -float("inf"))
        arg = tl.where(tl.max(a_top, axis=1) > m_i, start_n + tl.argmax(a_top, axis=1).to(tl.int32), arg)
        m_new = tl.maximum(m_i, tl.max(tl.where(active, a, float("-inf")), axis=1))
        alpha = tl.exp(m_i - m_new)                                # <= 1, finite: both start at log eps_den
        e = tl.where(active, tl.exp(tl.where(active, a - m_new[:, None], 0.0)), 0.0)

        # rescale the running sums to the new maximum and accumulate
        l_i = l_i * alpha + tl.sum(e, axis=1)
        acc = acc * alpha[:, None] + tl.dot(e.to(v.dtype), v, input_precision="ieee")
        m_i = m_new

    # -- epilogue: eps_den rescaled with the running max, receiver gate -----
    den = tl.exp(log_eps - m_i) + l_i          # = eps_den exp(-M) + l >= 1
    out = p_rcv[:, None] * (acc / den[:, None])
    store_stat(ROW_MAX, m_i, pid_bh, n_ctx, offs_m)        # the backward's row statistics
    store_stat(ROW_DEN, den, pid_bh, n_ctx, offs_m)
    store_stat(ROW_ARG, arg, pid_bh, n_ctx, offs_m)
    store_rows(OUT + b * stride_ob + h * stride_oh, out, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)


def oattention_fwd(q, k, v, p, mask=None, *, eps_den, causal=False):
    """OAttention core on projected heads q, k, v (B, H, N, dh) with presence p (B, N).

    ``mask``: None or 0/1 (N, N) / (1|B, N, N) visibility (1 = may attend);
    ``causal`` adds j <= i.  p gates both the sources and the receivers.
    Returns (out, row_max, row_den, row_arg): out (B, H, N, dh) in q's dtype
    and the row statistics (B, H, N) the backward needs (fp32, fp32, int32).

    >>> # doctest: +SKIP
    >>> out, *row_statistics = oattention_fwd(q, k, v, p, eps_den=1e-6)
    """
    b, h, n, dh = validate.heads_tensors(q=q, k=k, v=v)
    p = validate.token_vector(p, "p", b, n, q).float()
    mask = validate.visibility(mask, "mask", b, n, q)
    eps_den = validate.scalar(eps_den, "eps_den", positive=True)
    out = torch.empty((b, h, n, dh), dtype=q.dtype, device=q.device)
    row_max, row_den = (torch.empty((b, h, n), dtype=torch.float32, device=q.device) for _ in range(2))
    row_arg = torch.empty((b, h, n), dtype=torch.int32, device=q.device)
    t = tiles(n, dh)
    m_arg = mask if mask is not None else out          # unused pointer when HAS_MASK is False
    m_strides = (mask.stride(0) if mask.shape[0] > 1 else 0, mask.stride(1), mask.stride(2)) if mask is not None else (0, 0, 0)
    grid = (triton.cdiv(n, t["BLOCK_M"]), b * h)
    oattention_fwd_kernel[grid](
        q, k, v, p, m_arg, out, row_max, row_den, row_arg,
        h, n, dh, dh ** -0.5, math.log(eps_den),
        *q.stride(), *k.stride(), *v.stride(),
        *p.stride(), *m_strides, *out.stride(),
        HAS_MASK=mask is not None, IS_CAUSAL=bool(causal), **t,
    )
    return out, row_max, row_den, row_arg
