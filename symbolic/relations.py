"""Array edits the symbolic laws are stated with, for torch tensors and numpy object arrays alike.

A law's relation is written once and run twice: on z3 object arrays (to
build the claim) and on float64 tensors (to replay a counterexample).  These
helpers are the few edits it needs -- zero a token, insert a null token,
grow a mask -- with the same meaning for both array types.
"""
from __future__ import annotations

import numpy as np
import torch


def _is_torch(x) -> bool:
    return torch.is_tensor(x)


def copy(x):
    return x.clone() if _is_torch(x) else x.copy()


def with_token(x, i, value):
    """x with token i (axis 1) replaced by ``value`` (0 or an array of shape (B, D))."""
    out = copy(x)
    out[:, i] = value
    return out


def insert_null(xp, x, k):
    """(h_1..h_{k-1}, 0, h_k..h_n) along axis 1."""
    return xp.concat([x[:, :k], xp.zeros_like(x[:, :1]), x[:, k:]], axis=1)


def insert_visible(mask, k):
    """Grow a (B, n, n) mask to n + 1 with row and column k visible (as transforms.insert_visible)."""
    if mask is None:
        return None
    b, n, _ = mask.shape
    keep = [i for i in range(n + 1) if i != k]
    if _is_torch(mask):
        out = torch.ones(b, n + 1, n + 1, dtype=mask.dtype)
    else:
        out = np.empty((b, n + 1, n + 1), dtype=object)
        out.fill(1)
    out[:, np.array(keep)[:, None], np.array(keep)[None, :]] = mask
    return out


def others(n_new, k):
    return [i for i in range(n_new) if i != k]


def run(op, xp, x, mask, params):
    """The operator's own function on (x, mask) with ``params`` (mask only if it takes one)."""
    kwargs = dict(params)
    if op.domain.mask != "none":
        kwargs["mask"] = mask
    return op.fn(xp, x, **kwargs)


def causal(n, like):
    """Lower-triangular 0/1 (1, n, n) in ``like``'s array type."""
    tri = np.tril(np.ones((1, n, n)))
    if _is_torch(like):
        return torch.as_tensor(tri, dtype=torch.float64)
    return tri.astype(object)
