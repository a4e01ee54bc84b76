"""Fused pn_fir_tau backward over FIR keys, FlashAttention-2 style, no exp or log (docs/mathematics.md#pn-fir-tau).

Per row t, with r_tj = max(S_tj - tau, 0) (j <= t), the forward
(``pn_fir_tau_fwd.py``) leaves two row statistics: the peak m_t and a_t,
the first key at the peak.  With rho = r / m, l_t = sum_j rho_tj^10 and
P_tj = rho^10 / l (the power
normaliser), g = m / (1 + m) (the silence gate), O_t = g_t sum_j P_tj v_j and
dO the incoming gradient:

    dP_tj   = g_t dO_t . v_j
    delta_t = sum_j P_tj dP_tj                       (= g dO . y = rowsum(dO . O), y = sum_j P_tj v_j)
            = dP_ta + delta'_t,  delta'_t = sum_j P_tj (dP_tj - dP_ta)     (a_t: the peak key)
    dr_tj   = 10 rho^9 / (m l) (dP_tj - delta_t)     (the normaliser's part dN_tj: d r^10 / sum r^10)
            + [j in A_t] delta_t / (|A_t| m_t (1 + m_t))   (the gate: g'(m) dO . y, through the peak)
    ds_tj   = dr_tj  where S_tj > tau, else 0        (the rectifier)
    dq_t = scale sum_j ds_tj k~_j,  dk~_j = scale sum_t ds_tj q_t,  dv_j = sum_t g_t P_tj dO_t,
    dtau = -sum_tj ds_tj = -sum_t (sum_j (1 - rho_tj) dN_tj + [gate term of row t]),

with A_t the keys at row t's peak (a_t and any key tied with it).

and dk = F^T dk~ (``fir_key_grad.py``).  tau's gradient is not summed from
ds as is.  The power normaliser is scale invariant (homogeneous of degree 0
in r), so by Euler's identity its part dN_tj of ds has sum_j r_tj dN_tj =
10 sum_j P_tj (dP_tj - delta_t) = 0, and its row sum equals
sum_j (1 - rho_tj) dN_tj, whose weight is 0 at the peak and small on the
keys that carry the mass.  Summed directly, a row's terms cancel (a
hundredfold when a large value bias makes every dP ~100 while dP - delta
~1) and the rounding of each dP - delta (u |dP|) lands in dtau whole; the
(1 - rho) weights damp it where it is largest -- the order eager autograd
reaches through the peak's path (its share -sum_j rho_j dN_j, 0 in the
reals, is computed from the same rounded terms).

Unlike softmax, delta is not taken from rowsum(dO . O): the normaliser's
slope 10 / r amplifies the rounding of dP - delta tenfold and more, and in
a row with one positive score (every first row, every n = 1 sequence)
dP - delta is exactly 0 only if delta is built from the very dP values it
is subtracted from.  It is also centred on the peak key a: the dQ kernel
first sweeps dP_ta (the same dot as every other dP), then
delta'_t = sum_j P_tj (dP_tj - dP_ta) and the mass l against the stored
peak (both written for the dK/dV kernel, launched after it), then dq, with
the normaliser's term 10 rho^9 / (m l) ((dP - dP_a) - delta').  In the
reals that is dP - delta (sum_j P_tj = 1); in float32 it is exactly 0
wherever a row's dP are all equal (null tokens with a large value bias,
whose dP ~100 are equal: dP - sum P dP left ~u |dP|, times the slope 10 / r
and |k~| in dq -- 18x eager's dq error), and at the peak key it is
-delta', the other keys' small terms, where dP_a - delta would subtract
two nearly equal numbers in a saturated row.  The gate's term takes the
whole delta = dP_a + delta' (a product, no cancellation).  The mass is
recomputed because the forward's online l carries the rounding of every
(m_old / m_new)^10 rescale (~10 u each), and a sum of P that is not 1 to
within u would bias delta'.  O is not needed at all.  A silent row (m = 0) has O = 0,
delta = 0 and no positive r: every term is exactly 0 (the gate's term is
guarded, never 0/0).

The peak m = max_j r_j is not differentiable where keys tie; eager autograd
of ``amax`` splits its gradient evenly among the exact ties, and so does the
kernel.  Ties are structural, not rare: equal inputs give bitwise equal
scores (null tokens' keys are the key bias through the FIR's prefix of taps,
so every full-length key j >= 6 is the same), and giving the whole term to
the first key at the peak, as a subgradient may, sent none of it through
the FIR's transpose to the raw keys feeding only the later ones (d/dx 0.049
off against a predicted 7.2e-6 in the 30-example search).  The peak's keys
A_t are those whose r equals r_ta as the backward computes it (pass 1 picks
r_ta out of its tiles; both kernels recompute r with the same ``pn_tile`` on
the same tile pairs, so they agree on A_t bit for bit, whatever the forward's
rounding).  The dQ kernel counts |A_t| and sums their k~ in its last pass
(a 0/1 dot), adds the gate's share g'(m) dO . y / |A_t| times that sum to dq
and g'(m) dO . y once to tau's row sum, and writes the share for the dK/dV
kernel.  10 rho^9 is rho^8 rho by multiplications: the
backward, like the forward, evaluates no transcendental function.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import validate
from .capabilities import tiles
from .fir_key_grad import fir_key_grad
from .fir_launch import HALO, N_TAPS, taps_tensor
from .tiles import (fir_key_tile, fir_kv_tile, head_tile, load_rows, load_stat, power9, store_rows, store_stat,
                    top_key_dp)


@triton.jit
def pn_tile(q, k, do, v, offs_m, offs_n, n_ctx, tau, peak, mass, sm_scale):
    """(r, slope, prob, dp, gap) of one tile: the rectified scores r, d P / d r up to delta, P, dP = g dO . v,
    and 1 - rho = (m - r) / m (the weight of a key's normaliser term in tau's gradient)."""
    visible = (offs_m < n_ctx)[:, None] & (offs_n < n_ctx)[None, :] & (offs_n[None, :] <= offs_m[:, None])
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
    r = tl.where(visible, tl.maximum(s - tau, 0.0), 0.0)
    safe_m = tl.where(peak > 0.0, peak, 1.0)
    safe_l = tl.where(mass > 0.0, mass, 1.0)
    gate = peak / (1.0 + peak)
    rho = r / safe_m[:, None]
    rho9 = power9(rho)
    prob = rho9 * rho / safe_l[:, None]                           # P = rho^10 / l
    slope = 10.0 * rho9 / (safe_m * safe_l)[:, None]               # 10 r^9 / sum r^10
    dp = gate[:, None] * tl.dot(do, tl.trans(v), input_precision="ieee")
    gap = (peak[:, None] - r) / safe_m[:, None]                    # m - r exact for r >= m / 2
    return r, slope, prob, dp, gap


@triton.jit
def peak_keys(r, r_top):
    """The keys at the row's peak: r equal to the peak key's r as this backward computes it (ties included)."""
    return (r == r_top[:, None]) & (r > 0.0)


@triton.jit
def gate_share(dp_top, delta_c, peak, n_peak):
    """The gate's derivative g'(m) dO . y = (dP_a + delta') / (m (1 + m)), split evenly among the row's
    n_peak keys at the peak (0 in a silent row)."""
    delta = dp_top + delta_c
    d_gate = tl.where(peak > 0.0, delta / (tl.where(peak > 0.0, peak, 1.0) * (1.0 + peak)), 0.0)
    return tl.where(n_peak > 0.0, d_gate / tl.where(n_peak > 0.0, n_peak, 1.0), 0.0)


@triton.jit
def normaliser_grad(slope, dp, dp_top, delta_c):
    """The power normaliser's part of ds = dL/dS: 10 rho^9 / (m l) ((dP - dP_a) - delta')."""
    return slope * ((dp - dp_top[:, None]) - delta_c[:, None])


@triton.jit
def pn_fir_tau_bwd_dq_kernel(
    # pointers
    Q, K, V, TAPS, DO, PEAK, ARG, MASS, DP_TOP, DELTA, R_TOP, SHARE, DQ, DS_ROW,     # MASS .. SHARE: written here
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale, tau,
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
    peak = load_stat(PEAK, pid_bh, n_ctx, offs_m, 0.0)
    arg = load_stat(ARG, pid_bh, n_ctx, offs_m, -1)
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh
    hi = tl.minimum(n_ctx, (pid_m + 1) * BLOCK_M)

    # -- pass 0: dP_ta = g dO . v_a, the peak key's dP, from the same dot as every other dP ----
    gate = peak / (1.0 + peak)
    dp_top = gate * top_key_dp(do, V, arg, offs_d, hi, n_ctx, head_dim, stride_vn, stride_vd, BLOCK_M, BLOCK_N)

    # -- pass 1: the mass l_t = sum_j rho^10 and delta'_t = sum_j P_tj (dP_tj - dP_ta), from the
    #    very rho and dP the gradient uses, and r_ta, the peak key's r as this backward computes it
    ones = tl.full((BLOCK_M,), 1.0, dtype=tl.float32)
    mass = tl.zeros((BLOCK_M,), dtype=tl.float32)
    delta = tl.zeros((BLOCK_M,), dtype=tl.float32)
    r_top = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k, v = fir_kv_tile(K, V, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd,
                           stride_vn, stride_vd, q.dtype, BLOCK_N, BLOCK_D, N_TAPS, HALO)
        r, slope, power, dp, _ = pn_tile(q, k, do, v, offs_m, offs_n, n_ctx, tau, peak, ones, sm_scale)
        mass += tl.sum(power, axis=1)                              # rho^10 (mass 1 in pn_tile)
        delta += tl.sum(power * (dp - dp_top[:, None]), axis=1)
        r_top += tl.sum(tl.where(offs_n[None, :] == arg[:, None], r, 0.0), axis=1)
    delta = delta / tl.where(mass > 0.0, mass, 1.0)
    store_stat(MASS, mass, pid_bh, n_ctx, offs_m)
    store_stat(DP_TOP, dp_top, pid_bh, n_ctx, offs_m)
    store_stat(DELTA, delta, pid_bh, n_ctx, offs_m)
    store_stat(R_TOP, r_top, pid_bh, n_ctx, offs_m)

    # -- pass 2: dq from the normaliser's ds, each row's sum of it weighted by 1 - rho (tau's
    #    gradient), and the keys at the peak: how many, and the sum of their k~ (for the gate's term)
    dq = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    ds_row = tl.zeros((BLOCK_M,), dtype=tl.float32)
    n_peak = tl.zeros((BLOCK_M,), dtype=tl.float32)
    k_peak = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k, v = fir_kv_tile(K, V, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim, stride_kn, stride_kd,
                           stride_vn, stride_vd, q.dtype, BLOCK_N, BLOCK_D, N_TAPS, HALO)
        r, slope, prob, dp, gap = pn_tile(q, k, do, v, offs_m, offs_n, n_ctx, tau, peak, mass, sm_scale)
        ds = normaliser_grad(slope, dp, dp_top, delta)
        at_peak = peak_keys(r, r_top)
        dq += tl.dot(ds.to(k.dtype), k, input_precision="ieee")
        ds_row += tl.sum(tl.where(at_peak, 0.0, gap * ds), axis=1)
        n_peak += tl.sum(at_peak.to(tl.float32), axis=1)
        k_peak += tl.dot(at_peak.to(k.dtype), k, input_precision="ieee")       # 0/1 weights: the peak keys' k~

    # -- the gate's term g'(m) dO . y, split evenly among the keys at the peak (as eager autograd
    #    splits amax's gradient among exact ties); it adds g'(m) dO . y to the row's sum once
    share = gate_share(dp_top, delta, peak, n_peak)
    dq += share[:, None] * k_peak
    ds_row += share * n_peak
    store_stat(SHARE, share, pid_bh, n_ctx, offs_m)
    dq = dq * sm_scale
    store_rows(DQ + b * stride_gb + h * stride_gh, dq, offs_m, offs_d, n_ctx, head_dim, stride_gn, stride_gd)
    store_stat(DS_ROW, ds_row, pid_bh, n_ctx, offs_m)


@triton.jit
def pn_fir_tau_bwd_dkdv_kernel(
    # pointers
    Q, K, V, TAPS, DO, PEAK, MASS, DP_TOP, DELTA, R_TOP, SHARE, DKS, DV,
    # sizes and scalars
    H, n_ctx, head_dim, sm_scale, tau,
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
    k = fir_key_tile(K + b * stride_kb + h * stride_kh, TAPS, offs_n, offs_d, start_n, n_ctx, head_dim,
                     stride_kn, stride_kd, BLOCK_N, BLOCK_D, N_TAPS, HALO).to(Q.dtype.element_ty)
    v = load_rows(V + b * stride_vb + h * stride_vh, offs_n, offs_d, n_ctx, head_dim, stride_vn, stride_vd)

    # -- query tiles at or after this key tile (causal) ---------------------
    dk = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
    for start_m in range((start_n // BLOCK_M) * BLOCK_M, n_ctx, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q = load_rows(Q, offs_m, offs_d, n_ctx, head_dim, stride_qn, stride_qd)
        do = load_rows(DO, offs_m, offs_d, n_ctx, head_dim, stride_on, stride_od)
        peak = load_stat(PEAK, pid_bh, n_ctx, offs_m, 0.0)
        mass = load_stat(MASS, pid_bh, n_ctx, offs_m, 0.0)
        dp_top = load_stat(DP_TOP, pid_bh, n_ctx, offs_m, 0.0)
        delta = load_stat(DELTA, pid_bh, n_ctx, offs_m, 0.0)
        r_top = load_stat(R_TOP, pid_bh, n_ctx, offs_m, 0.0)
        share = load_stat(SHARE, pid_bh, n_ctx, offs_m, 0.0)
        r, slope, prob, dp, _ = pn_tile(q, k, do, v, offs_m, offs_n, n_ctx, tau, peak, mass, sm_scale)
        ds = normaliser_grad(slope, dp, dp_top, delta) + tl.where(peak_keys(r, r_top), share[:, None], 0.0)
        gate = peak / (1.0 + peak)
        dv += tl.dot(tl.trans(gate[:, None] * prob).to(do.dtype), do, input_precision="ieee")
        dk += tl.dot(tl.trans(ds).to(q.dtype), q, input_precision="ieee")

    dk = dk * sm_scale
    store_rows(DKS + b * stride_gb + h * stride_gh, dk, offs_n, offs_d, n_ctx, head_dim, stride_gn, stride_gd)
    store_rows(DV + b * stride_gb + h * stride_gh, dv, offs_n, offs_d, n_ctx, head_dim, stride_gn, stride_gd)


def pn_fir_tau_bwd(do, q, k, v, tau, peak, arg):
    """Gradients (dq, dk, dv, dtau) of pn_fir_tau for ``do``; ``peak`` and ``arg`` from the forward."""
    b, h, n, dh = validate.heads_tensors(q=q, k=k, v=v, do=do)
    mass, dp_top, delta, r_top, share = (torch.empty((b, h, n), dtype=torch.float32, device=q.device)
                                         for _ in range(5))
    dq, dv = (torch.empty((b, h, n, dh), dtype=q.dtype, device=q.device) for _ in range(2))
    dks = torch.empty((b, h, n, dh), dtype=torch.float32, device=q.device)
    ds_row = torch.empty((b, h, n), dtype=torch.float32, device=q.device)
    t = tiles(n, dh)
    common = (h, n, dh, dh ** -0.5, float(tau.detach()), *q.stride(), *k.stride(), *v.stride(), *do.stride(),
              *dq.stride())
    meta = dict(N_TAPS=N_TAPS, HALO=HALO, **t)
    taps = taps_tensor(q.device)
    pn_fir_tau_bwd_dq_kernel[(triton.cdiv(n, t["BLOCK_M"]), b * h)](
        q, k, v, taps, do, peak, arg, mass, dp_top, delta, r_top, share, dq, ds_row, *common, **meta)
    pn_fir_tau_bwd_dkdv_kernel[(triton.cdiv(n, t["BLOCK_N"]), b * h)](
        q, k, v, taps, do, peak, mass, dp_top, delta, r_top, share, dks, dv, *common, **meta)
    dtau = -ds_row.sum()                              # S - tau: every ds enters tau with a minus sign
    return dq, fir_key_grad(dks, k.dtype), dv, dtau.to(tau.dtype).reshape(tau.shape)
