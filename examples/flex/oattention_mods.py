"""OAttention written as FlexAttention mods, checked against tokenlaw's own ``oattention``.

    tokenlaw --operators examples/flex/oattention_mods.py check --operator oattention_mods --profile smoke

OAttention (``tokenlaw docs mathematics``, #oattention) is

    OAttn_i = p_i * sum_j p_j exp(s_ij) v_j / (eps_den + sum_j p_j exp(s_ij)),    p = rho_tau(h)

A FlexAttention user writes it in three pieces:

* the presence p_j of every token, computed from the tokens *outside* flex and captured by the score_mod,
  which adds log p_j to the score: p_j exp(s_ij) = exp(s_ij + log p_j), and a null token (p_j = 0) gets
  -inf, so exp gives it exactly no mass in the numerator or the denominator;
* eps_den, which plain mods cannot express: flex's denominator is sum_j exp(score_mod(s_ij)) over the
  keys it is given, nothing else.  So one key is appended, a *sink*: key 0 (its raw score is exactly 0)
  and value 0, whose score_mod gives log eps_den.  It adds exp(log eps_den) = eps_den to the denominator and
  nothing to the numerator: the formula above, in the reals, for every eps_den > 0.  Flex's max shift is
  then OAttention's own: the largest of log eps_den and the active s_ij + log p_j;
* the receiver gate p_i, multiplied into out_i outside flex.

Where the two can and cannot be equal (docs/flex.md, "OAttention as mods"):

* with the sink, equal in the reals for every input and every eps_den > 0, a row whose every key is null
  included: the sink takes the whole row's weight and its value is 0, so out_i = 0 exactly, as
  OAttention's num 0 / den exp(log eps_den - M) > 0;
* without the sink (the score_mod alone), flex computes OAttention at eps_den = 0, outside OAttention's
  domain (eps_den > 0): out_i differs by the factor D_i / (eps_den + D_i), D_i = sum_j p_j exp(s_ij),
  per head; a row whose every key is null gives 0 there only by flex's convention for a row of -inf
  scores (0, not 0/0);
* in floating point the two round differently (flex upcasts the scores, sums in its own order, and
  holds log eps_den and log p_j in the run's dtype): equal to a derived tolerance, never bit for bit.
  The contracts OAttention claims bit for bit (``null_receiver``, ``empty_support``) hold bit for bit here.

Gradients: flex has no CPU backward (torch 2.13), so ``gradcheck`` and ``null_gradient`` read "not
runnable here" on CPU; on CUDA they run.  Masks: this operator has none (a mask would be a mask_mod, see
``examples/flex/flex_mods.py``), so OAttention's ``mask_respect`` is not claimed.
"""
from __future__ import annotations

import math

import torch

from tokenlaw import TORCH, Domain, arguments, declare, limits
# the built-in OAttention's own parts, on purpose: this module re-expresses that operator
from tokenlaw.operators import flex, projections, references
from tokenlaw.operators.oattention import oattention_params
from tokenlaw.operators.presence import presence


def presence_bias(p, eps_den: float):
    """(B, N + 1): log p_j for each key (-inf for a null one), then log eps_den for the sink.

    log is taken only where p_j > 0 (log 1 = 0 elsewhere, then -inf by ``where``): a log(0) would send the
    backward's 1 / p_j = inf times 0 to NaN.  log eps_den is taken in float64 before it meets the dtype
    (eps_den = 1e-8 is 0 in float16), as OAttention's ``xp.log_full`` does.
    """
    p = p[..., 0]                                                       # (B, N)
    active = p > 0
    log_p = torch.where(active, torch.log(torch.where(active, p, torch.ones_like(p))),
                        torch.full_like(p, -math.inf))
    return torch.cat([log_p, torch.full_like(p[:, :1], math.log(eps_den))], dim=-1)


def presence_score_mod(bias):
    """The score_mod: score + bias[b, kv_idx] (log p_j for a token, log eps_den for the sink)."""
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + bias[b, kv_idx]
    return score_mod


def with_sink(t):
    """(B, H, N, dh) -> (B, H, N + 1, dh): one zero key / value appended (its raw score is exactly 0)."""
    return torch.cat([t, torch.zeros_like(t[:, :, :1])], dim=2)


def sink_attention(q, k, v, bias, attend=None):
    """flex_attention over the N keys and the sink, the score_mod adding ``bias``: (B, H, N, dh)."""
    mods = flex.Mods(presence_score_mod(bias), None)
    return flex.flex_core(mods, q, with_sink(k), with_sink(v), attend=attend)


@declare(
    name="oattention_mods",
    domain=Domain(params=oattention_params, positive=("tau", "eps_den"), limits=limits.FLOAT16_SCORES_NORM2),
    traits={"token_mixing", "presence"},
    reference=references.oattention_reference,
    claims={
        "null_receiver": "the receiver gate p_i = rho(0) = 0 multiplies out_i outside flex",
        "null_source_insertion": "a null key's score_mod adds log 0 = -inf: exp gives it no mass anywhere",
        "empty_support": "every key null: the sink (value 0) takes the whole row's weight, out = 0 exactly",
        "permutation_equivariance": "no mask_mod; the score_mod reads p at kv_idx, permuted with the tokens",
        "formula_equivalence": "the sink's exp(log eps_den) is OAttention's eps_den: the direct formula",
        "gradcheck": "flex's backward of a smooth softmax (CUDA; no CPU backward in torch 2.13)",
        "null_gradient": "a null key's -inf is a constant and p_i = rho(0) gates the row, rho'(0) = 0",
    },
)
def oattention_mods(xp, x, *, wq, bq, wk, bk, wv, bv, wo, heads, tau, eps_den):
    """OAttention over x (B, N, D) as FlexAttention: presence score_mod, a sink for eps_den, the gate outside."""
    arguments.tokens(x)
    arguments.positive(tau, "tau")
    arguments.positive(eps_den, "eps_den")
    p = presence(TORCH, x, tau=tau)                                      # (B, N, 1), outside flex
    q, k, v = projections.project_qkv(TORCH, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    o = sink_attention(q, k, v, presence_bias(p, eps_den))
    return projections.output(TORCH, p[:, None] * o, wo)                 # the receiver gate, outside flex
