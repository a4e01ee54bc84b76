"""An a-priori rounding bound for the gradients of core attention w.r.t. q, k and v.

The core formula ``O = softmax(scale q k^T + bias, over the visible keys) v`` (``operators.core.formula``)
has, per (batch, q-head), the textbook backward::

    dV = P^T dO      dP = dO V^T      D_i = sum_j P_ij dP_ij  (or sum_c dO_ic O_ic: FlashAttention)
    dS = P * (dP - D)      dQ = scale dS K      dK = scale dS^T Q

with K, V the kv head each q-head reads (``repeat_kv``) and dK, dV summed over the q-heads of a group.
:func:`gradients` evaluates it under the first-order error rules of ``softmax_backward.Model`` (Higham,
*Accuracy and Stability of Numerical Algorithms*, ch. 3: valid for any summation order, blocking or FMA):
in float64 its values are the formula's exact gradients (to u_64), and at a dtype's unit roundoff its
errors bound what any implementation of the usual algorithms may err by there:

* the scale applied to the scores, or split as sqrt(scale) onto q and k (SDPA's math backend): the split
  form's bound, which covers the other;
* P formed with the row max subtracted (eager softmax), or recomputed from the saved log-sum-exp
  (FlashAttention): both errors added;
* O by online rescaling with a running max (a flash forward, whose O the FlashAttention D reads);
* D by either formula (the larger bound, plus the gap between their exact values).

Only rounding is modelled: a backward with a wrong formula is off by the gradient's own size, which is
what ``core_laws.core_gradient`` judges against this bound.  Where the bound exceeds
``tolerance.BOUND_FRACTION`` of a gradient's own scale (saturated rows, huge scores: past the first-order
regime), that gradient decides nothing there (inconclusive, never a pass).
"""
from __future__ import annotations

import math

import torch

from tokenlaw.operators.core import repeat_kv

from .softmax_backward import EXP_UNITS, Carried, Model, _softmax, _t, gamma

LEAVES = ("q", "k", "v")


def _group_sum(m: Model, t: Carried, hkv: int) -> Carried:
    """A (B, Hq, S, *) gradient of the repeated kv heads summed over each group of Hq / Hkv q-heads."""
    b, hq = t.v.shape[:2]
    g = hq // hkv
    if g == 1:
        return t
    v = t.v.reshape(b, hkv, g, *t.v.shape[2:])
    e = t.e.reshape(b, hkv, g, *t.e.shape[2:])
    return Carried(v.sum(2), e.sum(2) + gamma(g, m.u) * v.abs().sum(2))


def gradients(q, k, v, cotangent, *, seen, bias, scale: float, dtype: torch.dtype) -> dict:
    """{leaf: Carried gradient} of ``sum(O * cotangent)`` w.r.t. q, k, v (float64 values; errors at ``dtype``).

    ``seen``: broadcastable bool visibility (mask and causality); ``bias``: the additive mask's finite
    entries (0 where hidden) or None; ``scale``: the scale the scores are multiplied by."""
    u, tiny = torch.finfo(dtype).eps / 2, torch.finfo(dtype).smallest_normal
    m = Model(u, tiny)
    hq, hkv = q.shape[1], k.shape[1]
    Q, K, V = m.given(q.double()), m.given(repeat_kv(k.double(), hq)), m.given(repeat_kv(v.double(), hq))
    root = math.sqrt(abs(scale))
    Qs, Ks = m.scale(Q, root), m.scale(K, math.copysign(root, scale))
    s = m.matmul(Qs, _t(Ks))
    if bias is not None:
        s = m.add(s, m.given(bias.double().expand_as(s.v)))
    visible = seen.expand_as(s.v)
    p, visible, lse, spread = _softmax(m, s, visible.double())
    n = s.v.shape[-1]
    # P recomputed from the log-sum-exp (a flash backward) errs differently from the max-shifted eager P
    shift = (torch.where(visible, s.v, lse) - lse).abs()
    p_lse = torch.where(visible, p.a * (u * shift + 2 * u * lse.abs() + EXP_UNITS * u + gamma(n + 2, u)) + tiny,
                        torch.zeros_like(p.v))
    p = Carried(p.v, p.e + p_lse)
    o = m.matmul(p, V)
    o = Carried(o.v, o.e + (gamma(3 * n, u) + u * spread) * (p.a @ V.a))
    d_o = m.given(cotangent.double())
    d_v = m.matmul(_t(p), d_o)
    d_p = m.matmul(d_o, _t(V))
    by_p, by_o = m.rowsum(m.mul(p, d_p)), m.rowsum(m.mul(d_o, o))
    d_row = Carried(by_p.v, torch.maximum(by_p.e, by_o.e + (by_o.v - by_p.v).abs()))
    d_s = m.mul(p, m.add(d_p, Carried(-d_row.v, d_row.e)))
    # dQ = sqrt(scale) (dS Ks), dK = sqrt(scale) (dS^T Qs): the split form's roundings
    d_q = m.scale(m.matmul(d_s, Ks), root)
    d_k = m.scale(m.matmul(_t(d_s), Qs), math.copysign(root, scale))
    return {"q": d_q, "k": _group_sum(m, d_k, hkv), "v": _group_sum(m, d_v, hkv)}


__all__ = ["gradients", "LEAVES"]
