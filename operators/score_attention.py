"""The body the normaliser zoo shares: masked multi-head attention with a row map W(S) (docs/mathematics.md#zoo).

    o = W(S; m) v per head, S = q k^T / sqrt(d_h), then W_o

``weights(xp, s, mask, **params)`` is the operator's row map; ``mask`` is the
(B|1, 1, N, N) head mask or None.  A masked key is removed multiplicatively or
through ``where`` inside each row map, never by adding -inf, so every
namespace can follow it.
"""
from __future__ import annotations

from . import arguments, projections


def visible(xp, s, mask):
    """The 0/1 visibility broadcast to the scores' shape (all ones without a mask)."""
    return xp.ones_like(s) if mask is None else mask * xp.ones_like(s)


def row_top(xp, s, m):
    """The largest visible score of each row (..., N, 1); a row that sees nothing gets its smallest score
    (any finite value: its weights are multiplied by m = 0)."""
    floor = xp.min(s, axis=-1, keepdims=True)
    return xp.max(xp.where(xp.gt(m, 0), s, floor), axis=-1, keepdims=True)


def attend(xp, x, mask, weights, *, wq, bq, wk, bk, wv, bv, wo, heads, **params):
    """Validate, project, score, weigh and merge: the zoo's masked multi-head attention."""
    arguments.tokens(x)
    mask = arguments.mask(mask, x)
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    w = weights(xp, projections.scores(xp, q, k), projections.head_mask(mask), **params)
    return projections.output(xp, xp.matmul(w, v), wo)
