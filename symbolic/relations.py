"""Array edits the symbolic laws use, for torch tensors and numpy object arrays alike.

The edits themselves (zero a token, insert a null token, grow a mask) live
with the statements both tiers evaluate (:mod:`tokenlaw.properties.statement`);
this module re-exports them for the proof strategies that are the symbolic
tier's own (the layered host insertion, block-wise closure) and adds the
runner and the causal visibility.
"""
from __future__ import annotations

import numpy as np
import torch

from tokenlaw.properties.statement import copy, insert_null, insert_visible, others, with_token

__all__ = ["copy", "with_token", "insert_null", "insert_visible", "others", "run", "causal"]


def run(op, xp, x, mask, params):
    """The operator's own function on (x, mask) with ``params`` (mask only if it takes one)."""
    kwargs = dict(params)
    if op.domain.mask != "none":
        kwargs["mask"] = mask
    return op.fn(xp, x, **kwargs)


def causal(n, like):
    """Lower-triangular 0/1 (1, n, n) in ``like``'s array type."""
    tri = np.tril(np.ones((1, n, n)))
    if torch.is_tensor(like):
        return torch.as_tensor(tri, dtype=torch.float64)
    return tri.astype(object)
