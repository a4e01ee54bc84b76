"""The pn_fir_tau family: causal attention over FIR-smoothed keys (docs/mathematics.md#normalisers).

One causal attention body, four row normalisers:

* ``sm_fir``     softmax (row mass exactly 1);
* ``pn``         power normaliser with tau = 0 (clips scores the FIR lowered);
* ``pn_fir_c``   pn on row-mean-centred scores (shift-invariant, cannot go silent);
* ``pn_fir_tau`` pn on S - tau with the peak silence gate (can go silent).
"""
from __future__ import annotations

import numpy as np
import torch

from . import arguments, limits, normalisers, projections, references
from .fir import TAPS, fir
from .registry import Domain, declare


def causal_mask(xp, like, n):
    """Lower-triangular 0/1 (N, N) in ``like``'s array type."""
    return xp.asarray(np.tril(np.ones((n, n))), like)     # in like's array type: no type branch here


def fir_attention(xp, x, weights, *, wq, bq, wk, bk, wv, bv, wo, heads, taps=TAPS, **norm):
    """Causal multi-head attention with FIR keys: o = W(q k~^T / sqrt(dh)) v."""
    arguments.tokens(x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    s = projections.scores(xp, q, fir(xp, k, taps=taps))
    w = weights(xp, s, causal_mask(xp, s, x.shape[1]), **norm)
    return projections.output(xp, xp.matmul(w, v), wo)


def fir_params(gen, d_model, dtype=torch.float64):
    return projections.attention_params(gen, d_model, dtype)


def tau_params(gen, d_model, dtype=torch.float64):
    p = projections.attention_params(gen, d_model, dtype)
    p["tau"] = float(torch.empty(()).uniform_(-0.5, 0.5, generator=gen))
    return p


_TRAITS = {"token_mixing", "causal", "score_normaliser", "positional"}
_CAUSAL = "scores use k~_j for j <= t and k~_j uses keys <= j"
_POSITIONAL = "the FIR is a delay line over positions"
_CAUSAL_GRAD = ("the backward streams only key tiles j <= t (and the FIR transpose only keys after i), with "
                "the causal mask inside the diagonal tile")


def _pn_tau_weights(xp, s, mask=None, *, tau):
    arguments.finite_scalar(tau, "tau")
    return normalisers.pn_tau(xp, s, mask, tau=tau)


@declare(name="sm_fir", domain=Domain(params=fir_params, limits=limits.SOFTMAX_SCORES), traits=_TRAITS,
         weights=normalisers.softmax, reference=references.sm_fir_reference,
         implementation_claims={"gradient_causality": _CAUSAL_GRAD},
         claims={"causality": _CAUSAL, "score_shift_invariance": "softmax ignores a per-row constant",
                 "simplex": "softmax rows sum to one", "gradcheck": "smooth"},
         violates={"silence": "softmax row mass is always 1", "zero_transcendental": "softmax evaluates exp",
                   "permutation_equivariance": _POSITIONAL})
def sm_fir(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, taps=TAPS):
    """Softmax attention over FIR keys."""
    return fir_attention(xp, x, normalisers.softmax, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads,
                         taps=taps)


@declare(name="pn", domain=Domain(params=fir_params, limits=limits.FLOAT16_SCORES), traits=_TRAITS,
         weights=normalisers.pn, reference=references.pn_reference,
         claims={"causality": _CAUSAL, "sub_simplex": "r^10 / sum r^10 is 0 or a distribution",
                 "silence": "no positive score: r = 0, the guarded row is exactly 0",
                 "zero_transcendental": "x^10 by four multiplications"},
         violates={"score_shift_invariance": "rectification at 0: lowering a row clips valid scores (Prop. 1)",
                   "permutation_equivariance": _POSITIONAL})
def pn_attention(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, taps=TAPS):
    """Power-normalised attention with tau = 0 over FIR keys."""
    return fir_attention(xp, x, normalisers.pn, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads,
                         taps=taps)


@declare(name="pn_fir_c", domain=Domain(params=fir_params, limits=limits.FLOAT16_SCORES), traits=_TRAITS,
         weights=normalisers.pn_centred, reference=references.pn_fir_c_reference,
         claims={"causality": _CAUSAL, "score_shift_invariance": "centring removes any per-row constant",
                 "sub_simplex": "r^10 / sum r^10 is 0 or a distribution",
                 "zero_transcendental": "x^10 by four multiplications"},
         violates={"silence": "after centring some score is >= 0; mass is 1 unless the row is constant",
                   "permutation_equivariance": _POSITIONAL})
def pn_fir_c(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, taps=TAPS):
    """pn over row-mean-centred FIR scores."""
    return fir_attention(xp, x, normalisers.pn_centred, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads,
                         taps=taps)


@declare(name="pn_fir_tau", domain=Domain(params=tau_params, reals=("tau",), limits=limits.FLOAT16_SCORES), traits=_TRAITS,
         weights=_pn_tau_weights, reference=references.pn_fir_tau_reference,
         implementation_claims={"gradient_causality": _CAUSAL_GRAD,
                                "silent_gradient": "a silent row has O = 0, delta = 0, no positive r and a "
                                                   "guarded gate term: every ds of it is exactly 0"},
         claims={"causality": _CAUSAL, "tau_covariance": "W depends on S - tau only",
                 "sub_simplex": "gate g < 1 times a distribution (or 0)",
                 "gate_below_one": "g = m / (1 + m) <= 1/2 for peaks m <= 1",
                 "silence": "no positive S - tau: peak m = 0, gate 0, row 0",
                 "zero_transcendental": "x^10 by multiplication, gate m/(1+m) by division",
                 "gradcheck": "piecewise smooth; random points avoid the kinks"},
         violates={"score_shift_invariance": "at fixed tau a shift moves S - tau (absorbed by tau: see tau_covariance)",
                   "permutation_equivariance": _POSITIONAL})
def pn_fir_tau(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, tau, taps=TAPS):
    """pn_fir_tau: calibrated sub-simplex attention over FIR keys with the peak silence gate."""
    arguments.finite_scalar(tau, "tau")
    return fir_attention(xp, x, normalisers.pn_tau, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo,
                         heads=heads, tau=tau, taps=taps)
