"""Canary (body != weights=): declares the gated pn_fir_tau weights, but its body runs ungated pn at tau = 0.

It ignores tau, so it is not silent when every S - tau <= 0 (7.6 at tau = 1e6
on the issue's example) and not tau-covariant, and its rows of peak <= 1 have
mass 1.  Laws that judged the declared ``weights=`` proved / passed all three.
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments, normalisers, projections
from tokenlaw.operators.fir import TAPS
from tokenlaw.operators.fir_attention import fir_attention
from tokenlaw.operators.registry import Domain, declare

REASON = "body runs ungated pn (tau ignored) while weights= is the gated pn_fir_tau normaliser"


def params(gen, d_model, dtype=torch.float64):
    p = projections.attention_params(gen, d_model, dtype)
    p["tau"] = float(torch.empty(()).uniform_(-0.5, 0.5, generator=gen))
    return p


def gated(xp, s, mask=None, *, tau):
    return normalisers.pn_tau(xp, s, mask, tau=tau)


@declare(name="weights_ungated_pn", domain=Domain(params=params, reals=("tau",)),
         traits={"token_mixing", "causal", "score_normaliser", "positional"}, weights=gated,
         claims={"silence": "wrongly claimed: the body ignores tau",
                 "tau_covariance": "wrongly claimed: the body ignores tau",
                 "gate_below_one": "wrongly claimed: the body has no gate"})
def weights_ungated_pn(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, tau, taps=TAPS):
    """pn over FIR keys at threshold 0, whatever tau says."""
    arguments.finite_scalar(tau, "tau")
    return fir_attention(xp, x, normalisers.pn, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo,
                         heads=heads, taps=taps)
