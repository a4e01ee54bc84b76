"""Independent references: every operator's output written straight from the formulas of docs/mathematics.md#operators.

Each function here restates one operator as plainly as the math in
``docs/mathematics.md`` reads, against the array namespace ``xp``, and shares *no*
helper with the optimised code path: presence, the causal visibility, the
FIR taps (recomputed from ``w_k ∝ exp(-k²/8)``), the head split, softmax
and the power normaliser are all written again here.  A semantic bug in
the shipping code (a mask hiding the diagonal, the FIR applied to values,
taps out of order, a miscalibrated presence) therefore shows up as a
disagreement with the reference in float64 (the ``spec_reference``
contract), instead of being present on both sides of the comparison.

The formulas are *unstabilised* (``exp(s)`` as written): where they
overflow the reference is not finite and the contract sets the example
aside (and counts it) instead of judging it.

The rectified power normalisers are discontinuous (pn, pn_fir_c) or kinked
(pn_fir_tau) where a row's largest rectified score crosses 0 (the row's mass
jumps between 1 and 0, or leaves 0 with slope 1); their reference carries ``threshold_margin(xp, x, **params)``, the per-output-row
distance of that score from 0 relative to the row's score scale, so a
contract can compare away from the discontinuity and report how many rows
it set aside.

>>> import torch
>>> from tokenlaw.operators.xp import TORCH
>>> [round(w, 4) for w in spec_taps()]
[0.2943, 0.2597, 0.1785, 0.0955, 0.0398, 0.0129, 0.0033]
"""
from __future__ import annotations

import math

# -- docs/mathematics.md#presence ------------------------------------------------


def spec_presence(xp, h, tau):
    """rho_tau(h) = |h|^2 / (tau + |h|^2), one per token: shape (..., N, 1)."""
    sq = xp.sum(h * h, axis=-1, keepdims=True)
    return xp.div(sq, tau + sq)


# -- projections, written out ----------------------------------------------------


def _heads(xp, t, heads):
    """(B, N, D) -> (B, heads, N, D / heads): head h takes features h*dh .. (h+1)*dh - 1."""
    b, n, d = t.shape
    return xp.swapaxes(xp.reshape(t, (b, n, heads, d // heads)), 1, 2)


def _unheads(xp, t):
    b, h, n, dh = t.shape
    return xp.reshape(xp.swapaxes(t, 1, 2), (b, n, h * dh))


def _qkv(xp, x, wq, bq, wk, bk, wv, bv, heads):
    return (_heads(xp, xp.matmul(x, wq) + bq, heads), _heads(xp, xp.matmul(x, wk) + bk, heads),
            _heads(xp, xp.matmul(x, wv) + bv, heads))


def _scores(xp, q, k):
    """s_ij = <q_i, k_j> / sqrt(d_head) (times the constant 1 / sqrt(d_head): no division for a solver to guard)."""
    return xp.matmul(q, xp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(q.shape[-1]))


def _visible_lower(xp, like, n):
    """m_tj = 1 for j <= t, else 0 (docs/mathematics.md#fir: causal scores), built entry by entry."""
    return xp.asarray([[1.0 if j <= t else 0.0 for j in range(n)] for t in range(n)], like=like)


# -- docs/mathematics.md#oattention and docs/mathematics.md#sdpa -----------


# The largest score the oattention reference exponentiates unshifted: exp(64) = 6e27 and a few hundred of them
# stay finite in float32 (its probe) and far from float64's overflow.
UNSHIFTED = 64.0


def oattention_reference(xp, x, mask=None, *, carrier=None, wq, bq, wk, bk, wv, bv, wo, heads, tau, eps_den):
    """OAttn_i = p_i sum_j m_ij p_j exp(s_ij) v_j / (eps_den + sum_j m_ij p_j exp(s_ij)), then W_o."""
    p = spec_presence(xp, x if carrier is None else carrier, tau)          # (B, N, 1)
    q, k, v = _qkv(xp, x, wq, bq, wk, bk, wv, bv, heads)
    s = _scores(xp, q, k)                                                  # (B, H, N, N)
    p_j = xp.swapaxes(p, -1, -2)[:, None]                                  # (B, 1, 1, N)
    m = xp.ones_like(s) if mask is None else (mask[None, None] if mask.ndim == 2 else mask[:, None]) * xp.ones_like(s)
    # numerator and denominator both times exp(-c), c = max(0, the row's largest visible score - UNSHIFTED):
    # the formula as written is inf / inf once a score passes 709 (spec_reference could not judge that
    # regime).  Rows whose scores stay under UNSHIFTED are the formula as written, bit for bit: shifting them
    # too pushed p_j exp(s - c) of a tiny presence (1e-33) into float32's subnormals, and the float32 probe of
    # the reference then erred by 1 % and predicted a float64 bound 1e10 past float64's rounding
    # (tests/fuzz/test_fuzz_seed3.py: an operator 1e-12 wrong held)
    low = xp.min(s, axis=-1, keepdims=True)
    c = xp.relu(xp.max(xp.where(xp.gt(m, 0), s, low), axis=-1, keepdims=True) - UNSHIFTED)
    weight = xp.exp(s - c) * p_j * m
    o = p[:, None] * xp.div(xp.matmul(weight, v), eps_den * xp.exp(-c) + xp.sum(weight, axis=-1, keepdims=True))
    return xp.matmul(_unheads(xp, o), wo)


def _softmax(xp, s, m):
    """W_tj = m_tj exp(s_tj) / sum_j m_tj exp(s_tj), each row's exponents shifted by its largest visible score.

    The shift is docs/mathematics.md#sdpa's own remark (softmax is invariant to a per-row constant):
    without it exp underflows to subnormals once every score of a row is below
    -708 and the reference, not the operator, would be wrong.
    """
    low = xp.min(s, axis=-1, keepdims=True)
    top = xp.max(xp.where(xp.gt(m, 0), s, low), axis=-1, keepdims=True)
    e = xp.exp(s - top) * m
    return xp.div(e, xp.sum(e, axis=-1, keepdims=True))


def sdpa_reference(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """softmax(q k^T / sqrt(dh)) v per head (masked keys get weight 0), then W_o."""
    q, k, v = _qkv(xp, x, wq, bq, wk, bk, wv, bv, heads)
    s = _scores(xp, q, k)
    m = xp.ones_like(s) if mask is None else (mask[None, None] if mask.ndim == 2 else mask[:, None]) * xp.ones_like(s)
    return xp.matmul(_unheads(xp, xp.matmul(_softmax(xp, s, m), v)), wo)


# -- docs/mathematics.md#fir: the causal FIR on keys ------------------------------


def spec_taps(n_taps: int = 7, sigma: float = 2.0) -> tuple:
    """w_k = exp(-k^2 / (2 sigma^2)) / sum_k exp(-k^2 / (2 sigma^2)), k = 0..6 (docs/mathematics.md#fir)."""
    raw = [math.exp(-(k * k) / (2.0 * sigma * sigma)) for k in range(n_taps)]
    total = sum(raw)
    return tuple(r / total for r in raw)


def fir_reference(xp, x, *, taps=None):
    """k~_t = sum_{k=0..6, k <= t} w_k k_{t-k} (zero padding before the first token), row by row."""
    w = spec_taps() if taps is None else taps
    n = x.shape[-2]
    rows = []
    for t in range(n):
        row = w[0] * x[..., t:t + 1, :]
        for k in range(1, len(w)):
            if t - k >= 0:
                row = row + w[k] * x[..., t - k:t - k + 1, :]
        rows.append(row)
    return xp.concat(rows, axis=-2)


def _fir_attention(xp, x, normalise, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """o_t = sum_j W_tj v_j with S_tj = <q_t, k~_j> / sqrt(d), j <= t; FIR on keys only."""
    q, k, v = _qkv(xp, x, wq, bq, wk, bk, wv, bv, heads)
    s = _scores(xp, q, fir_reference(xp, k))
    w = normalise(s, _visible_lower(xp, s, x.shape[1]) * xp.ones_like(s))
    return xp.matmul(_unheads(xp, xp.matmul(w, v)), wo)


def _power(xp, r):
    """(r^10 / sum_j r^10), 0 for a row with no positive r (docs/mathematics.md#normalisers: such a row has mass 0)."""
    u = r ** 10
    total = xp.sum(u, axis=-1, keepdims=True)
    positive = xp.gt(total, 0)
    return xp.where(positive, xp.div(u, xp.where(positive, total, xp.ones_like(total))), xp.zeros_like(u))


def sm_fir_reference(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """sm_fir: softmax over the causal FIR scores."""
    return _fir_attention(xp, x, lambda s, m: _softmax(xp, s, m),
                          wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)


def pn_reference(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """pn: W_tj = (S+_tj)^10 / sum_j (S+_tj)^10 over visible j, x+ = max(x, 0)."""
    return _fir_attention(xp, x, lambda s, m: _power(xp, xp.maximum(s, 0.0) * m),
                          wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)


def _centred(xp, s, m):
    return s - xp.div(xp.sum(s * m, axis=-1, keepdims=True), xp.sum(m, axis=-1, keepdims=True))


def pn_fir_c_reference(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """pn_fir_c: pn on S_tj - mean_{j <= t} S_tj."""
    return _fir_attention(xp, x, lambda s, m: _power(xp, xp.maximum(_centred(xp, s, m), 0.0) * m),
                          wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)


def pn_fir_tau_reference(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, tau):
    """pn_fir_tau: W_tj = g_t (S'+_tj)^10 / sum_j (S'+_tj)^10, S' = S - tau, g = m / (1 + m), m = max_j S'+_tj."""
    def normalise(s, m):
        r = xp.maximum(s - tau, 0.0) * m
        peak = xp.max(r, axis=-1, keepdims=True)
        return xp.div(peak, 1.0 + peak) * _power(xp, r)

    return _fir_attention(xp, x, normalise, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)


def _margin(shifted):
    """Per output row (B, N): min over heads of |max_j S'_tj| / max_j |S_tj|, the threshold's distance."""
    def margin(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, **threshold):
        q, k, v = _qkv(xp, x, wq, bq, wk, bk, wv, bv, heads)
        s = _scores(xp, q, fir_reference(xp, k))
        m = _visible_lower(xp, s, x.shape[1]) * xp.ones_like(s)
        sp = shifted(xp, s, m, **threshold)
        # the largest visible S' (masked entries pushed below every visible one)
        low = xp.min(sp, axis=-1, keepdims=True) - 1.0
        top = xp.max(xp.where(xp.gt(m, 0), sp, low), axis=-1)                    # (B, H, N)
        scale = xp.max(xp.abs(s) * m, axis=-1) + xp.max(xp.abs(sp) * m, axis=-1)
        rel = xp.div(xp.abs(top), xp.where(xp.gt(scale, 0), scale, xp.ones_like(scale)))
        return xp.min(rel, axis=1)                                               # (B, N)
    return margin


# The same thresholded scores as functions of the scores themselves (the score laws draw S directly).
pn_reference.threshold_scores = lambda xp, s, m: s
pn_fir_c_reference.threshold_scores = lambda xp, s, m: _centred(xp, s, m)
pn_fir_tau_reference.threshold_scores = lambda xp, s, m, tau: s - tau
pn_reference.threshold_margin = _margin(pn_reference.threshold_scores)
pn_fir_c_reference.threshold_margin = _margin(pn_fir_c_reference.threshold_scores)
# pn_fir_tau is continuous at its threshold (the gate m / (1 + m) -> 0), but not smooth: a
# probe on the silent side of the kink predicts zero error while D's rounding may cross it.
pn_fir_tau_reference.threshold_margin = _margin(pn_fir_tau_reference.threshold_scores)


# -- docs/mathematics.md#token-maps: local O-maps and their plain counterparts ----


def _layer_norm(xp, h, gamma, beta, eps):
    mu = xp.mean(h, axis=-1, keepdims=True)
    var = xp.mean((h - mu) * (h - mu), axis=-1, keepdims=True)
    return xp.div(h - mu, xp.sqrt(var + eps)) * gamma + beta


def _rms_norm(xp, h, gamma, beta, eps):
    return xp.div(h, xp.sqrt(xp.mean(h * h, axis=-1, keepdims=True) + eps)) * gamma + beta


def layernorm_reference(xp, x, *, gamma, beta, eps=1e-5):
    """LayerNorm(h) = (h - mean h) / sqrt(var h + eps) * gamma + beta."""
    return _layer_norm(xp, x, gamma, beta, eps)


def rmsnorm_reference(xp, x, *, gamma, beta, eps=1e-5):
    """RMSNorm(h) = h / sqrt(mean h^2 + eps) * gamma + beta."""
    return _rms_norm(xp, x, gamma, beta, eps)


def onorm_ln_reference(xp, x, *, gamma, beta, tau, eps=1e-5):
    """ONorm = rho(h) * LayerNorm(h)."""
    return spec_presence(xp, x, tau) * _layer_norm(xp, x, gamma, beta, eps)


def onorm_rms_reference(xp, x, *, gamma, beta, tau, eps=1e-5):
    """ONorm = rho(h) * RMSNorm(h)."""
    return spec_presence(xp, x, tau) * _rms_norm(xp, x, gamma, beta, eps)


def _ffn(xp, h, w1, b1, w2, b2):
    """FFN(h) = GELU(h W1 + b1) W2 + b2, exact GELU z Phi(z) = z (1 + erf(z / sqrt 2)) / 2."""
    z = xp.matmul(h, w1) + b1
    return xp.matmul(z * (1.0 + xp.erf(xp.div(z, math.sqrt(2.0)))) * 0.5, w2) + b2


def ffn_update_reference(xp, x, *, w1, b1, w2, b2):
    """h + FFN(h)."""
    return x + _ffn(xp, x, w1, b1, w2, b2)


def offn_reference(xp, x, *, w1, b1, w2, b2, tau):
    """h + rho(h) FFN(h)."""
    return x + spec_presence(xp, x, tau) * _ffn(xp, x, w1, b1, w2, b2)


def linear_inject_reference(xp, x, *, w, b):
    """x W + b."""
    return xp.matmul(x, w) + b


def oinject_reference(xp, x, *, w, b, tau):
    """rho(x) (x W + b)."""
    return spec_presence(xp, x, tau) * (xp.matmul(x, w) + b)


def presence_reference(xp, x, *, tau):
    """rho_tau(h) per token."""
    return spec_presence(xp, x, tau)


# -- docs/mathematics.md#standardize: coupled maps ---------------------------------


def ostandardize_reference(xp, x, *, tau, eps=1e-5):
    """p_i (h_i - mu) / sqrt(sigma^2 + eps), mu and sigma^2 presence-weighted; no mass: 0."""
    # h - mu is formed as (h - h_0) - sum_j w_j (h_j - h_0) with w_j = p_j / sum p (the same
    # number in the reals): a lone present token (w = p / p = 1) or repeated tokens then centre
    # to exactly 0 instead of to rounding noise, which 1 / sqrt(eps) would amplify into a
    # disagreement that is the reference's own error.
    p = spec_presence(xp, x, tau)
    mass = xp.sum(p, axis=-2, keepdims=True)
    w = xp.where(xp.gt(mass, 0), xp.div(p, xp.where(xp.gt(mass, 0), mass, xp.ones_like(mass))), xp.zeros_like(p))
    d = x - x[..., :1, :]
    c = d - xp.sum(w * d, axis=-2, keepdims=True)
    var = xp.sum(w * c * c, axis=-2, keepdims=True)
    return p * xp.div(c, xp.sqrt(var + eps))


def standardize_reference(xp, x, *, eps=1e-5):
    """(h_i - mean_j h_j) / sqrt(var_j h_j + eps), per feature."""
    d = x - x[..., :1, :]                      # shifted data, as in ostandardize_reference
    c = d - xp.mean(d, axis=-2, keepdims=True)
    return xp.div(c, xp.sqrt(xp.mean(c * c, axis=-2, keepdims=True) + eps))


# -- docs/mathematics.md#hosts: pre-norm residual blocks, written as a loop over the blocks ----------
# Each host is restated here block by block from the component references above (LayerNorm, ONorm,
# SDPA, OAttention with its hidden carrier, the FFN, the standardisations and the embeddings); nothing
# is shared with operators/composition.py (its slot tables, residual_block, compose_layers).  The depth
# is len(blocks): the parameters the host is called with are the ones its reference receives.


def _plain_block(xp, h, mask, b):
    """h1 = h + SDPA(LN(h)),  h2 = h1 + FFN(LN(h1))."""
    a = b["attn"]
    h1 = h + sdpa_reference(xp, layernorm_reference(xp, h, **b["norm1"]), mask, **a)
    f = b["ffn"]
    return h1 + _ffn(xp, layernorm_reference(xp, h1, **b["norm2"]), f["w1"], f["b1"], f["w2"], f["b2"])


def _oa_block(xp, h, mask, b, tau, eps_den):
    """h1 = h + OAttn(LN(h); presence from h),  h2 = h1 + FFN(LN(h1))."""
    h1 = h + oattention_reference(xp, layernorm_reference(xp, h, **b["norm1"]), mask, carrier=h, tau=tau,
                                  eps_den=eps_den, **b["attn"])
    f = b["ffn"]
    return h1 + _ffn(xp, layernorm_reference(xp, h1, **b["norm2"]), f["w1"], f["b1"], f["w2"], f["b2"])


def _o_block(xp, h, mask, b, tau, eps_den):
    """h1 = h + OAttn(ONorm(h); presence from h),  h2 = h1 + rho(h1) FFN(ONorm(h1))."""
    h1 = h + oattention_reference(xp, onorm_ln_reference(xp, h, tau=tau, **b["norm1"]), mask, carrier=h,
                                  tau=tau, eps_den=eps_den, **b["attn"])
    f = b["ffn"]
    u = onorm_ln_reference(xp, h1, tau=tau, **b["norm2"])
    return h1 + spec_presence(xp, h1, tau) * _ffn(xp, u, f["w1"], f["b1"], f["w2"], f["b2"])


def standard_host_reference(xp, x, mask=None, *, blocks, tau=None, eps_den=None, inject=None):
    """L pre-norm blocks h + SDPA(LN(h)), h + FFN(LN(h)) (standard_host and its depth variants)."""
    h = x
    for b in blocks:
        h = _plain_block(xp, h, mask, b)
    return h


def oa_only_host_reference(xp, x, mask=None, *, blocks, tau, eps_den, inject=None):
    """L pre-norm blocks h + OAttn(LN(h); p from h), h + FFN(LN(h)) (oa_only_host and its depth variants)."""
    h = x
    for b in blocks:
        h = _oa_block(xp, h, mask, b, tau, eps_den)
    return h


def otransformer_reference(xp, x, mask=None, *, blocks, tau, eps_den, inject=None):
    """L blocks h + OAttn(ONorm(h); p from h), h + rho(h) FFN(ONorm(h)) (otransformer and its depth variants)."""
    h = x
    for b in blocks:
        h = _o_block(xp, h, mask, b, tau, eps_den)
    return h


def tabular_standard_reference(xp, x, mask=None, *, blocks, inject, tau=None, eps_den=None):
    """Standardise over tokens, x W + b, then the standard blocks."""
    h = linear_inject_reference(xp, standardize_reference(xp, x), **inject)
    for b in blocks:
        h = _plain_block(xp, h, mask, b)
    return h


def tabular_otransformer_reference(xp, x, mask=None, *, blocks, inject, tau, eps_den):
    """OStandardise over tokens, rho(x) (x W + b), then the O-blocks."""
    h = oinject_reference(xp, ostandardize_reference(xp, x, tau=tau), tau=tau, **inject)
    for b in blocks:
        h = _o_block(xp, h, mask, b, tau, eps_den)
    return h
