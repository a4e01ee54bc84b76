"""Tile helpers shared by the kernels (``@triton.jit`` device functions).

Every kernel here has the shape of the Triton fused-attention tutorial: a
prologue that finds this program's tile (:func:`head_tile`) and loads it, a
loop over the other axis whose step is a helper of its own, and an epilogue
that stores.  The helpers below are the strided loads and stores all six
kernels share: a (rows, head_dim) tile of a (B, H, N, dh) tensor, zero past
the last token and the head width (:func:`load_rows`, :func:`store_rows`),
and one fp32/int32 statistic per row of a contiguous (B, H, N) tensor
(:func:`load_stat`, :func:`store_stat`).
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def head_tile(H, BLOCK: tl.constexpr, BLOCK_D: tl.constexpr):
    """This program's place in the grid (tiles of BLOCK rows, batch * heads).

    Returns (tile index, pid_bh, b, h, offs, offs_d): the tile's row offsets
    ``offs`` and the head-dim offsets ``offs_d`` of its (batch, head) pair.
    """
    pid = tl.program_id(0)
    pid_bh = tl.program_id(1)
    return pid, pid_bh, pid_bh // H, pid_bh % H, pid * BLOCK + tl.arange(0, BLOCK), tl.arange(0, BLOCK_D)


@triton.jit
def load_rows(X, offs, offs_d, n_ctx, head_dim, stride_n, stride_d):
    """The (rows, head_dim) tile of one head's rows ``offs`` (``X`` at that head): 0 past n_ctx and head_dim."""
    return tl.load(X + offs[:, None] * stride_n + offs_d[None, :] * stride_d,
                   mask=(offs < n_ctx)[:, None] & (offs_d < head_dim)[None, :], other=0.0)


@triton.jit
def store_rows(X, tile, offs, offs_d, n_ctx, head_dim, stride_n, stride_d):
    """Store ``tile`` at one head's rows ``offs`` of ``X`` in X's dtype, inside n_ctx and head_dim only."""
    tl.store(X + offs[:, None] * stride_n + offs_d[None, :] * stride_d, tile.to(X.dtype.element_ty),
             mask=(offs < n_ctx)[:, None] & (offs_d < head_dim)[None, :])


@triton.jit
def load_stat(X, pid_bh, n_ctx, offs, other):
    """Row statistic of head ``pid_bh`` at rows ``offs`` from a contiguous (B, H, N) tensor; ``other`` past n_ctx."""
    return tl.load(X + pid_bh * n_ctx + offs, mask=offs < n_ctx, other=other)


@triton.jit
def store_stat(X, value, pid_bh, n_ctx, offs):
    """Store a row statistic of head ``pid_bh`` at rows ``offs`` of a contiguous (B, H, N) tensor."""
    tl.store(X + pid_bh * n_ctx + offs, value, mask=offs < n_ctx)


@triton.jit
def fir_key_tile(K, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd,
                 BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, N_TAPS: tl.constexpr, HALO: tl.constexpr):
    """Causal FIR of the key rows ``offs_n``: k~_j = sum_t w_t k_{j-t}, in fp32.

    Reads the tile's rows plus the HALO = N_TAPS - 1 rows before ``start_n``
    (zero before the first token); the smoothed keys exist only in registers.
    """
    # The read window of this tile is [start_n - HALO, start_n + BLOCK_N), clipped at token 0.
    lo = tl.maximum(start_n - HALO, 0)
    rows = K + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd
    d_ok = offs_d[None, :] < head_dim
    acc = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    for t in tl.static_range(N_TAPS):
        src = offs_n - t
        k = tl.load(rows - t * stride_kn, mask=((src >= lo) & (src < n_ctx))[:, None] & d_ok, other=0.0)
        acc += tl.load(TAPS + t) * k.to(tl.float32)
    return acc


@triton.jit
def fir_kv_tile(K, V, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd, stride_vn, stride_vd,
                dtype: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, N_TAPS: tl.constexpr,
                HALO: tl.constexpr):
    """A key tile's smoothed keys k~ (``fir_key_tile``, rounded to ``dtype`` for the dot) and its values v."""
    k = fir_key_tile(K, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd,
                     BLOCK_N, BLOCK_D, N_TAPS, HALO).to(dtype)
    return k, load_rows(V, offs_n, offs_d, n_ctx, head_dim, stride_vn, stride_vd)


@triton.jit
def top_key_dp(do, V, arg, offs_d, hi, n_ctx, head_dim, stride_vn, stride_vd,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dP_ta = dO_t . v_a for each row t of the tile, a_t its top key (``arg``; -1: none, 0), from the same
    ``dO . v^T`` dot over the key tiles below ``hi`` as every other dP of the row."""
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        v = load_rows(V, offs_n, offs_d, n_ctx, head_dim, stride_vn, stride_vd)
        dp = tl.dot(do, tl.trans(v), input_precision="ieee")
        acc += tl.sum(tl.where(offs_n[None, :] == arg[:, None], dp, 0.0), axis=1)
    return acc


@triton.jit
def _x2_x8(x):
    """(x**2, x**8) by three squarings."""
    x2 = x * x
    x4 = x2 * x2
    return x2, x4 * x4


@triton.jit
def power9(x):
    """x**9 as x2 = x*x, x4 = x2*x2, x8 = x4*x4, x8*x: multiplications only."""
    _, x8 = _x2_x8(x)
    return x8 * x


@triton.jit
def power10(x):
    """x**10 as x2 = x*x, x4 = x2*x2, x8 = x4*x4, x8*x2: multiplications only."""
    x2, x8 = _x2_x8(x)
    return x8 * x2


@triton.jit
def centred(dp, at_top, delta, rest, rest_dp):
    """dP_ij - delta_i, with delta_i = sum_j P_ij dP_ij, evaluated without cancellation at the row's top key.

    At the top key a (the one carrying most weight) dP_a - delta equals
    rest dP_a - rest_dP, with rest = 1 - P_a = sum_{j != a} P_j (plus the
    share of eps_den, for OAttention) and rest_dP = sum_{j != a} P_j dP_j:
    small terms only, where dP_a - delta subtracts two nearly equal numbers
    and loses the difference when the row is saturated.  (Eager autograd
    gets it through the gradient of its max shift.)  Elsewhere P_j is small
    and dP_j - delta is used as is.
    """
    return tl.where(at_top, rest[:, None] * dp - rest_dp[:, None], dp - delta[:, None])
