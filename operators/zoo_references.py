"""Independent references for the normaliser zoo, written straight from each formula (docs/mathematics.md#zoo).

Like ``operators/references.py`` (whose plain projections they reuse), these
share no helper with the operators' own code: no support test, no
stabilising shift except where a formula's own remark gives one, and the
sparse maps' thresholds found by bisection rather than in closed form.  A
semantic slip in an operator (a wrong threshold, a mask counted wrongly, the
sink in the wrong head) is then a disagreement in float64 (``spec_reference``).
Where a plain formula overflows (exp of a large score) it is evaluated with its
numerator and denominator both times exp(-c) (the identity a / b = a e^-c / (b e^-c)):
a reference that is not finite in a regime leaves that regime unjudged, and the
fuzz tier reads such a cell vacuous (issue 43).
"""
from __future__ import annotations

from .references import _qkv, _scores, _unheads

# Bisection halves [-1, 0] this many times: 2^-80 is below float64's spacing near every tau in [-1, 0]
# except the smallest few (|tau| < 2^-28), where the weights it moves are below 2^-80 themselves.
BISECTION_STEPS = 80


def _visibility(xp, s, mask):
    """m_tj broadcast to the scores (B, H, N, N): all ones without a mask."""
    if mask is None:
        return xp.ones_like(s)
    return (mask[None, None] if mask.ndim == 2 else mask[:, None]) * xp.ones_like(s)


def _attention(xp, x, mask, row_map, *, wq, bq, wk, bk, wv, bv, wo, heads):
    q, k, v = _qkv(xp, x, wq, bq, wk, bk, wv, bv, heads)
    s = _scores(xp, q, k)
    return xp.matmul(_unheads(xp, xp.matmul(row_map(s, _visibility(xp, s, mask)), v)), wo)


def _relative(xp, s, m):
    """s_tj - max over the visible keys of row t (the sparse maps are invariant to it: their defining remark)."""
    low = xp.min(s, axis=-1, keepdims=True)
    return s - xp.max(xp.where(xp.gt(m, 0), s, low), axis=-1, keepdims=True)


def _bisect(xp, mass, like):
    """The root in [-1, 0] of a decreasing ``mass(tau)`` with mass(-1) >= 1 >= mass(0) = 0 (per row)."""
    lo, hi = xp.full_like(like, -1.0), xp.zeros_like(like)
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) * 0.5
        big = xp.gt(mass(mid), 1.0)
        lo, hi = xp.where(big, mid, lo), xp.where(big, hi, mid)
    return (lo + hi) * 0.5


def sparsemax_reference(xp, x, mask=None, **params):
    """W = m (s - tau)_+ with sum_j m (s - tau)_+ = 1 (tau by bisection), then W v, then W_o."""
    def row_map(s, m):
        u = _relative(xp, s, m)
        tau = _bisect(xp, lambda t: xp.sum(m * xp.relu(u - t), axis=-1, keepdims=True), u[..., :1])
        return m * xp.relu(u - tau)
    return _attention(xp, x, mask, row_map, **params)


def entmax15_reference(xp, x, mask=None, **params):
    """W = m (s/2 - tau)_+^2 with sum_j W = 1 (tau by bisection), then W v, then W_o."""
    def row_map(s, m):
        z = _relative(xp, s, m) * 0.5
        tau = _bisect(xp, lambda t: xp.sum(m * xp.relu(z - t) * xp.relu(z - t), axis=-1, keepdims=True), z[..., :1])
        return m * xp.relu(z - tau) * xp.relu(z - tau)
    return _attention(xp, x, mask, row_map, **params)


def _top(xp, s, m):
    """The largest visible score of each row (the lowest score of a row that sees nothing)."""
    low = xp.min(s, axis=-1, keepdims=True)
    return xp.max(xp.where(xp.gt(m, 0), s, low), axis=-1, keepdims=True)


# The exponential formulas below are evaluated with numerator and denominator both multiplied by exp(-c),
# c = max(0, the row's largest visible score) (the algebraic identity a / b = a e^-c / (b e^-c)): the formula
# as written is NaN (inf / inf) once a score passes 709, and spec_reference could not judge the large-score
# regime at all (issue 43: a regime whose every row was set aside is vacuous).


def softmax_one_reference(xp, x, mask=None, **params):
    """W = m exp(s) / (1 + sum_j m exp(s)), then W v, then W_o."""
    def row_map(s, m):
        c = xp.relu(_top(xp, s, m))
        e = m * xp.exp(s - c)
        return xp.div(e, xp.exp(-c) + xp.sum(e, axis=-1, keepdims=True))
    return _attention(xp, x, mask, row_map, **params)


def sink_softmax_reference(xp, x, mask=None, *, sinks, **params):
    """W = m exp(s) / (exp(b_h) + sum_j m exp(s)) for head h, then W v, then W_o."""
    def row_map(s, m):
        b = xp.reshape(sinks, (1, sinks.shape[0], 1, 1))
        c = b + xp.relu(_top(xp, s, m) - b)                  # max(b_h, the largest visible score)
        e = m * xp.exp(s - c)
        return xp.div(e, xp.exp(b - c) + xp.sum(e, axis=-1, keepdims=True))
    return _attention(xp, x, mask, row_map, **params)


def sigmoid_reference(xp, x, mask=None, **params):
    """W = m / (1 + exp(-(s - log n))), n = sum_j m (visible keys), then W v, then W_o."""
    def row_map(s, m):
        n = xp.sum(m, axis=-1, keepdims=True)
        return xp.div(m, 1.0 + xp.exp(-(s - xp.log(n))))
    return _attention(xp, x, mask, row_map, **params)


def softpick_reference(xp, x, mask=None, *, eps, **params):
    """W = m relu(exp(s) - 1) / (sum_j m |exp(s) - 1| + eps), then W v, then W_o."""
    def row_map(s, m):
        c = xp.relu(_top(xp, s, m))
        d = xp.exp(s - c) - xp.exp(-c)
        return xp.div(m * xp.relu(d), xp.sum(m * xp.abs(d), axis=-1, keepdims=True) + eps * xp.exp(-c))
    return _attention(xp, x, mask, row_map, **params)


def rela_reference(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads, eps):
    """o = (m relu(s)) v per head, o / sqrt(mean(o^2) + eps), heads merged, then W_o."""
    q, k, v = _qkv(xp, x, wq, bq, wk, bk, wv, bv, heads)
    s = _scores(xp, q, k)
    o = xp.matmul(_visibility(xp, s, mask) * xp.relu(s), v)
    o = xp.div(o, xp.sqrt(xp.mean(o * o, axis=-1, keepdims=True) + eps))
    return xp.matmul(_unheads(xp, o), wo)
