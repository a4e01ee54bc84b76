"""An a-priori rounding bound for the textbook backward of multi-head softmax attention.

A backend that declares an operator's backward *standard* (``Backend.standard_backward``) computes,
per head, from the saved row statistics::

    dV = P^T dO      dP = dO V^T      D_i = sum_j P_ij dP_ij  (or sum_k dO_ik O_ik: FlashAttention)
    dS = P * (dP - D)      dQ = dS K / sqrt(dh)      dK = dS^T Q / sqrt(dh)

between the operator's own projections.  At a saturated row (P one-hot in the dtype) the true dS is
tiny while dP and D are not, and each implementation cancels them with its own roundings: no eager
probe predicts another algorithm's cancellation (docs/flex.md measures a hundredfold difference).
The eager probes of ``gradient_agreement`` still predict the error of the steps they share with the
backend (the projections, the scores, dV's and dP's products); this module bounds what the standard
backward's *own* steps add, which no probe takes (:func:`_own`):

* P recomputed from the row's log-sum-exp, exp(S - LSE) (FlashAttention), where the eager operator
  subtracts the row max: a subtraction at the scale of |LSE|;
* O by online rescaling with a running max;
* dS = P (dP - D) formed from dP's rounding and D's, with either D formula.

Each is a first-order worst-case bound in the standard rules (Higham, *Accuracy and Stability of
Numerical Algorithms*, ch. 3), which hold for any summation order, blocking or FMA use:

* an input rounded to D:        E = u |x|
* C = A B, inner length k:      E_C = |A| E_B + E_A |B| + gamma(k + 1) |A| |B|     (gamma(k) = k u / (1 - k u))
* c = a * b (elementwise):      E_c = |a| E_b + E_a |b| + u |c|
* P recomputed as exp(S - LSE): E_P' = P (u |S - LSE| + 2 u |LSE| + EXP + gamma(n + 2)) + the smallest
  normal of D (an entry may underflow to 0); EXP = 8 u covers a vectorised exp of up to 4 ulps
  (ATen's CPU kernels use SLEEF-style exp_u20: 2.0 ulps);
* O's online rescaling: each rescale by exp(m_old - m_new) errs by EXP + u |m_old - m_new|, and the
  steps add up to at most the row's score range: (gamma(3 n) + u range_S) |P| |V|;
* D: the larger of the two formulas' bounds (rowsum(P dP) and rowsum(dO O)), so either backward is covered;

carried on to every leaf (x, each [W; b], wo) to first order through the exact |values|.

The model is validated before it is used: evaluated in float64, its gradients must be the reference
gradients (the operator's own float64 autograd) within its float64 bound, else it is another function
there and the caller says so (:func:`bound`).  The float64 reference has a rounding error of its own
(it differentiates through the row max too, which routes each row's sum_l dS_l to its argmax entry):
the whole model at u_64 (every step, with that row sum added to every dS entry) bounds it, and joins
the bound.  Only rounding is modelled: a backward with a wrong formula (no D term, D accumulated in a
lower precision, a scaled backward) is off by far more wherever dS is not itself cancelled, and
tests/integrations/test_torch_sdpa.py shows such backwards still fail.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from tokenlaw.operators import dtypes, projections
from tokenlaw.operators.xp import TORCH

# the tokens' gradient's name (properties.implementation_laws.gradients)
TOKENS = "x"
# relative error of one exp in units of u: 4 ulps (SLEEF-style vectorised exp is within 1 to 3.5 ulps)
EXP_UNITS = 8.0


def gamma(k: int, u: float) -> float:
    """gamma_k = k u / (1 - k u): the relative error bound of a sum or dot product of k terms; infinite
    (no bound) once k u >= 1, where the sum may have lost every bit (bfloat16, u = 2^-8, past 255 terms:
    k u = 1 divided by zero, and k u > 1 gave a negative bound).

    >>> gamma(1, 0.5), gamma(256, 2.0 ** -8), gamma(257, 2.0 ** -8)
    (1.0, inf, inf)
    """
    return k * u / (1.0 - k * u) if k * u < 1.0 else math.inf


class Carried:
    """A float64 value ``v`` and a bound ``e`` on the error of the same quantity computed in the dtype."""

    def __init__(self, v: torch.Tensor, e: torch.Tensor):
        self.v, self.e = v, e

    @property
    def a(self) -> torch.Tensor:
        return self.v.abs()


class Model:
    """The error rules at unit roundoff ``u`` (underflow floor ``tiny``)."""

    def __init__(self, u: float, tiny: float):
        self.u, self.tiny = u, tiny

    def given(self, v: torch.Tensor) -> Carried:
        """An input rounded to the dtype."""
        return Carried(v, self.u * v.abs())

    def exact(self, v: torch.Tensor) -> Carried:
        return Carried(v, torch.zeros_like(v))

    def matmul(self, a: Carried, b: Carried) -> Carried:
        k = a.v.shape[-1]
        e = a.a @ b.e + a.e @ b.a + (gamma(k + 1, self.u) * (a.a @ b.a) + k * self.tiny)
        return Carried(a.v @ b.v, e)

    def mul(self, a: Carried, b: Carried) -> Carried:
        c = a.v * b.v
        return Carried(c, a.a * b.e + a.e * b.a + self.u * c.abs() + self.tiny)

    def add(self, a: Carried, b: Carried) -> Carried:
        c = a.v + b.v
        return Carried(c, a.e + b.e + self.u * c.abs())

    def scale(self, a: Carried, c: float) -> Carried:
        return Carried(a.v * c, a.e * abs(c) + self.u * (a.v * c).abs())

    def rowsum(self, a: Carried) -> Carried:
        n = a.v.shape[-1]
        return Carried(a.v.sum(-1, keepdim=True),
                       a.e.sum(-1, keepdim=True) + gamma(n, self.u) * a.a.sum(-1, keepdim=True) + n * self.tiny)

    def colsum(self, a: Carried) -> Carried:
        """Sum over every axis but the last (a bias gradient: over batch and tokens)."""
        flat_v, flat_e = a.v.reshape(-1, a.v.shape[-1]), a.e.reshape(-1, a.v.shape[-1])
        n = flat_v.shape[0]
        return Carried(flat_v.sum(0), flat_e.sum(0) + gamma(n, self.u) * flat_v.abs().sum(0) + n * self.tiny)


def _split(t: Carried, heads: int) -> Carried:
    return Carried(projections.split_heads(TORCH, t.v, heads), projections.split_heads(TORCH, t.e, heads))


def _merge(t: Carried) -> Carried:
    return Carried(projections.merge_heads(TORCH, t.v), projections.merge_heads(TORCH, t.e))


def _t(t: Carried) -> Carried:
    return Carried(t.v.transpose(-1, -2), t.e.transpose(-1, -2))


def _softmax(m: Model, s: Carried, mask) -> tuple[Carried, torch.Tensor, torch.Tensor, torch.Tensor]:
    """P = softmax(S) over the visible keys (a row that sees none: 0, as torch's kernels give) with E_P, the
    visible-key mask, the row's log-sum-exp and its score range over the visible keys."""
    visible = torch.ones_like(s.v, dtype=torch.bool) if mask is None else (mask > 0).expand_as(s.v)
    sv = torch.where(visible, s.v, torch.full_like(s.v, -math.inf))
    top = sv.amax(-1, keepdim=True)
    seen = torch.isfinite(top)
    top0 = torch.where(seen, top, torch.zeros_like(top))
    ex = torch.where(visible, torch.exp(torch.where(visible, s.v, top0) - top0), torch.zeros_like(s.v))
    total = torch.where(seen, ex.sum(-1, keepdim=True), torch.ones_like(top))
    p = torch.where(seen, ex / total, torch.zeros_like(ex))
    lse = torch.where(seen, top0 + torch.log(total), torch.zeros_like(top))
    es = torch.where(visible, s.e, torch.zeros_like(s.e))
    n = s.v.shape[-1]
    relative = (es + (p * es).sum(-1, keepdim=True) + EXP_UNITS * m.u + gamma(n + 2, m.u)
                + m.u * (torch.where(visible, s.v, top0) - top0).abs() + 2 * m.u * lse.abs())
    e = torch.where(visible, p * relative + m.tiny, torch.zeros_like(p))
    low = torch.where(visible, s.v, torch.full_like(s.v, math.inf)).amin(-1, keepdim=True)
    spread = torch.where(seen, top0 - torch.where(seen, low, top0), torch.zeros_like(top))
    return Carried(p, e), visible, lse, spread


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])


def _leaves(m: Model, roles, X: Carried, W: dict, g: Carried, om: Carried, d_q: Carried, d_k: Carried,
            d_v: Carried) -> dict:
    """The gradients of the leaves (the tokens ``x``, the projections, the output weight; named by ``roles``)
    from the heads' dQ, dK, dV (merged) and O."""
    flat = Carried(_flat(X.v), _flat(X.e))
    out = {roles.output: m.matmul(_t(Carried(_flat(om.v), _flat(om.e))), Carried(_flat(g.v), _flat(g.e)))}
    dx = None
    for (w, b), d in ((roles.query, d_q), (roles.key, d_k), (roles.value, d_v)):
        out[w], out[b] = m.matmul(_t(flat), Carried(_flat(d.v), _flat(d.e))), m.colsum(d)
        term = m.matmul(d, _t(W[w]))
        dx = term if dx is None else m.add(dx, term)
    out[TOKENS] = dx
    return out


@dataclasses.dataclass(frozen=True)
class _Pass:
    """The forward and the standard backward's intermediates, each Carried under one :class:`Model`."""

    m: Model
    roles: object
    X: Carried
    W: dict
    g: Carried
    q: Carried
    k: Carried
    v: Carried
    s: Carried
    p: Carried
    visible: torch.Tensor
    lse: torch.Tensor
    rescaled: torch.Tensor          # the online rescaling's bound on O
    o: Carried
    d_o: Carried
    d_v: Carried
    d_p: Carried
    centred: Carried                # dP - D
    d_s: Carried
    scale: float


def _pass(x, params: dict, roles, mask, cotangent, u: float, tiny: float) -> _Pass:
    """Run the forward and the standard backward (module docstring) under the model at ``u``."""
    m = Model(u, tiny)
    heads = params[roles.heads]
    X = m.given(x.double())
    W = {k: m.given(params[k].double()) for k in (*roles.query, *roles.key, *roles.value, roles.output)}
    q, k, v = (_split(m.add(m.matmul(X, W[w]), W[b]), heads) for w, b in (roles.query, roles.key, roles.value))
    scale = 1.0 / math.sqrt(q.v.shape[-1])
    s = m.scale(m.matmul(q, _t(k)), scale)
    p, visible, lse, spread = _softmax(m, s, projections.head_mask(mask))
    rescaled = (gamma(3 * s.v.shape[-1], m.u) + m.u * spread) * (p.a @ v.a)
    o = m.matmul(p, v)
    o = Carried(o.v, o.e + rescaled)
    g = m.given(cotangent.double())
    d_o = _split(m.matmul(g, _t(W[roles.output])), heads)
    d_v = m.matmul(_t(p), d_o)
    d_p = m.matmul(d_o, _t(v))
    by_p, by_o = m.rowsum(m.mul(p, d_p)), m.rowsum(m.mul(d_o, o))
    d_row = Carried(by_p.v, torch.maximum(by_p.e, by_o.e + (by_o.v - by_p.v).abs()))
    centred = m.add(d_p, Carried(-d_row.v, d_row.e))
    d_s = m.scale(m.mul(p, centred), scale)
    return _Pass(m, roles, X, W, g, q, k, v, s, p, visible, lse, rescaled, o, d_o, d_v, d_p, centred, d_s, scale)


def _whole(t: _Pass, through_max: bool) -> dict:
    """{leaf: Carried gradient} under the whole model; ``through_max``: each row's sum of dS errors added to
    every entry (the eager autograd's route through the row max)."""
    d_s = Carried(t.d_s.v, t.d_s.e + t.d_s.e.sum(-1, keepdim=True)) if through_max else t.d_s
    return _leaves(t.m, t.roles, t.X, t.W, t.g, _merge(t.o), _merge(t.m.matmul(d_s, t.k)),
                   _merge(t.m.matmul(_t(d_s), t.q)), _merge(t.d_v))


def _own(t: _Pass) -> dict:
    """{leaf: the bound on what the standard backward's own steps add}, the steps no eager probe evaluates:

    * P recomputed from the row's log-sum-exp, exp(S - LSE) (FlashAttention): a subtraction at the scale of
      |LSE| where the eager operator subtracts the row max, E_P' = P (u |S - LSE| + 2 u |LSE| + EXP + gamma);
    * O by online rescaling (the running max): (gamma(3 n) + u range_S) |P| |V| on top of E_P' |V|;
    * dS = P (dP - D) formed from dP's rounding and either D formula's, where the eager autograd routes the
      row's cancellation through its max.
    Each is carried on to the leaves to first order through the exact |values|.
    """
    m, p, n, dh = t.m, t.p, t.s.v.shape[-1], t.q.v.shape[-1]
    shift = (torch.where(t.visible, t.s.v, t.lse) - t.lse).abs()
    p_own = torch.where(t.visible, p.a * (m.u * shift + 2 * m.u * t.lse.abs() + EXP_UNITS * m.u
                                          + gamma(n + 2, m.u)) + m.tiny, torch.zeros_like(p.v))
    o_own = p_own @ t.v.a + t.rescaled
    dp_own = gamma(dh + 1, m.u) * (t.d_o.a @ t.v.a.transpose(-1, -2))
    row_own = torch.maximum((p_own * t.d_p.a + p.a * dp_own).sum(-1, keepdim=True)
                            + gamma(n, m.u) * (p.a * t.d_p.a).sum(-1, keepdim=True),
                            (t.d_o.a * o_own).sum(-1, keepdim=True)
                            + gamma(dh, m.u) * (t.d_o.a * t.o.a).sum(-1, keepdim=True))
    ds_own = t.scale * (p_own * t.centred.a + p.a * (dp_own + row_own + m.u * t.centred.a))

    def moved(e):           # a (B, heads, N, dh) error on its own: merged, its value no part of the sum
        e = projections.merge_heads(TORCH, e)
        return Carried(torch.zeros_like(e), e)

    own = _leaves(Model(0.0, 0.0), t.roles, Carried(t.X.v, torch.zeros_like(t.X.v)),
                  {w: m.exact(c.v) for w, c in t.W.items()}, m.exact(t.g.v), moved(o_own), moved(ds_own @ t.k.a),
                  moved(ds_own.transpose(-1, -2) @ t.q.a), moved(p_own.transpose(-1, -2) @ t.d_o.a))
    return {name: c.e for name, c in own.items()}


def bound(x, params: dict, roles, mask, cotangent, dtype: torch.dtype, reference: dict) -> tuple[dict | None, str]:
    """({leaf: bound}, "") on what the standard backward's own steps add in ``dtype`` (:func:`_own`: the steps
    no eager probe takes, so the probes cannot predict them), plus the float64 ``reference``'s own error
    (the whole model at u_64, through the row max); (None, why) where the model is not the reference's
    function ({leaf: tensor}, the operator's float64 autograd).
    """
    own = _own(_pass(x, params, roles, mask, cotangent, dtypes.UNIT_ROUNDOFF[dtype],
                     torch.finfo(dtype).smallest_normal))
    at_64 = _whole(_pass(x, params, roles, mask, cotangent, dtypes.UNIT_ROUNDOFF[torch.float64],
                         torch.finfo(torch.float64).smallest_normal), through_max=True)
    out = {}
    for name, ref in reference.items():
        if name not in own:
            return None, f"the standard-backward bound has no d/d{name}"
        value, e64 = at_64[name].v, at_64[name].e
        finite = torch.isfinite(ref)
        if value.shape != ref.shape or not bool(torch.isfinite(value).all()):
            return None, f"the standard-backward bound does not model d/d{name} here"
        # in float64 the model and the reference are the same function: they may differ by both roundings
        gap = (value - ref).abs()
        if not bool((gap[finite] <= 2 * e64[finite]).all()):
            worst = float((gap - 2 * e64)[finite].max())
            return None, (f"the standard-backward bound models another function here (d/d{name}: float64 "
                          f"values differ by {worst:.3g} past both roundings)")
        out[name] = own[name] + e64
    return out, ""
