"""OAttention: presence-gated attention in which a null token is inert (docs/mathematics.md#oattention).

    OAttn_i = p_i * sum_j m_ij p_j exp(s_ij) v_j / (eps_den + sum_j m_ij p_j exp(s_ij))

Stabilised form, in log space: with M_i the largest s_ij + log p_j among
*active* sources (m_ij p_j > 0), and at least log(eps_den), numerator and
denominator are multiplied by exp(-M_i), so eps_den enters as
eps_den * exp(-M_i).  Null or masked sources never take part in M_i, so a
null token with a huge key cannot underflow the others.
"""
from __future__ import annotations

import torch

from . import arguments, limits, projections, references
from .presence import presence
from .registry import Domain, declare


def oattention_core(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
    """Per-head OAttention on projected q, k, v (B, H, N, dh).

    p_src, p_rcv: presence broadcastable to (B, H, 1, N) and (B, H, N, 1);
    mask: None or broadcastable to (B, H, N, N) with 0/1 entries.
    """
    s = projections.scores(xp, q, k)
    mass = p_src * (xp.ones_like(s) if mask is None else mask * xp.ones_like(s))
    active = xp.gt(mass, 0)
    # Log space: p_j exp(s_ij) = exp(s_ij + log p_j).  The shift M is the
    # largest *active* exponent (null and masked sources never take part) and
    # at least log(eps_den).  Any M gives the same ratio; this one puts the
    # denominator's largest term at exactly 1, so nothing overflows, the
    # denominator is never subnormal (whose 1/den^2 would overflow in the
    # backward and send inf * rho'(0) = NaN to null tokens), and inactive
    # entries are cut from the gradient by the wheres.
    a = s + xp.log(xp.where(active, mass, xp.ones_like(mass)))    # log 1 = 0 where inactive: never log 0
    # Inactive entries stand in as log(eps_den), never as a score: a fully masked row then
    # has M = log(eps_den) and den = 1 exactly, where a row minimum taken over huge masked
    # scores made exp(log eps_den - M) subnormal (or 0) and the backward's 1/den^2 overflow
    # (fuzzer counterexample: empty row, scores at +97.6 in float32).  The kernel's running
    # max starts from log(eps_den) the same way.
    # log(eps_den) as an array like a's last column; a Python float's log is taken in float64
    # before it meets the dtype (xp.log_full says why), a traced value's through xp.log.
    log_eps = xp.log_full(a[..., :1], eps_den)                    # (..., N, 1): broadcast by where
    top = xp.max(xp.where(active, a, log_eps), axis=-1, keepdims=True)
    top = xp.maximum(top, log_eps)
    e = xp.where(active, xp.exp(xp.where(active, a - top, xp.zeros_like(a))), xp.zeros_like(a))
    num = xp.matmul(e, v)
    # eps_den exp(-M) = exp(log eps_den - M) <= 1.  Never as a product: exp(-M) alone
    # overflows float16 once M < -11 (eps_den <= 1.5e-5, scores all below -11), and
    # eps_den * inf = inf sent the output to 0 and the gradient to NaN.
    den = xp.exp(log_eps - top) + xp.sum(e, axis=-1, keepdims=True)
    den = xp.where(xp.gt(den, 0), den, xp.ones_like(den))
    return p_rcv * xp.div(num, den)


def oattention_params(gen, d_model, dtype=torch.float64, *, heads=None):
    p = projections.attention_params(gen, d_model, dtype, heads=heads)
    p["tau"] = float(torch.empty(()).uniform_(0.1, 2.0, generator=gen))
    p["eps_den"] = float(10 ** torch.empty(()).uniform_(-6, 0, generator=gen))
    return p


# The formula of docs/mathematics.md#oattention, written independently of this module (presence included): operators/references.py
oattention_direct = references.oattention_reference


def oattention_errors(kw):
    """Bad calls beyond the generated ones: heads that do not divide the width, a carrier of other tokens."""
    yield arguments.ErrorInput("heads-3", lambda k: {**k, "heads": 3}, "heads")
    yield arguments.ErrorInput("carrier-tokens", lambda k: {**k, "carrier": k["x"][:, :-1]}, "carrier")


@declare(
    name="oattention",
    domain=Domain(params=oattention_params, mask="random", positive=("tau", "eps_den"), limits=limits.FLOAT16_SCORES_NORM2),
    errors=oattention_errors,
    traits={"token_mixing", "masked", "presence"},
    reference=references.oattention_reference,
    claims={
        "null_receiver": "the receiver gate p_i = rho(0) = 0 multiplies the output",
        "null_source_insertion": "a null source has p_j = 0: no numerator or denominator mass",
        "empty_support": "no active source: numerator 0, denominator exp(log eps_den - M) > 0",
        "mask_respect": "m_ij = 0 removes j from both sums",
        "permutation_equivariance": "no position terms",
        "softmax_reduction": "tau -> 0, eps_den -> 0 leaves p = 1 and plain softmax",
        "formula_equivalence": "multiplying by exp(-M) scales num, den and eps_den alike",
        "gradcheck": "smooth in its inputs away from ties",
        "null_gradient": "every path from a null token passes through p = rho(0), whose derivative is 0",
    },
    violates={
        "zero_transcendental": "the softmax kernel of OAttention evaluates exp",
    },
    implementation_claims={
        "null_key_immunity": "the running max is over active sources only: a null carrier's huge key never "
                             "enters it",
        "null_carrier_gradient": "inactive entries are zeroed before and after exp in the backward too, and the "
                                 "receiver gate multiplies every gradient of a row",
        "masked_gradient": "a masked entry has P = E = 0 in the backward: no ds, dv or dp",
    },
)
def oattention(xp, x, mask=None, *, carrier=None, wq, bq, wk, bk, wv, bv, wo, heads, tau, eps_den):
    """OAttention over x (B, N, D); presence from ``carrier`` (the hidden state) or x."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    arguments.positive(tau, "tau")
    arguments.positive(eps_den, "eps_den")
    if carrier is not None:
        arguments.tokens(carrier, "carrier", like=x)
    p = presence(xp, x if carrier is None else carrier, tau=tau)        # (B, N, 1)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    p_src = xp.swapaxes(p, -1, -2)[:, None]                              # (B, 1, 1, N)
    p_rcv = p[:, None]                                                   # (B, 1, N, 1)
    o = oattention_core(xp, q, k, v, p_src, p_rcv, projections.head_mask(mask), eps_den=eps_den)
    return projections.output(xp, o, wo)
