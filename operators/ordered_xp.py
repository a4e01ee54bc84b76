"""An eager namespace whose reductions are sequential left folds: bit-exact null insertion.

BLAS ``matmul`` and vectorised ``sum`` regroup their partial sums by length
and tile, so inserting a token changes the rounding of every other token's
sums by an ulp even when the law holds exactly (the inserted terms are
exact zeros).  A left fold ``((t_1 + t_2) + t_3) + ...`` is invariant to
inserting exact zeros anywhere (``s + 0.0 == s``), and elementwise ops act
on each entry alone, so with :data:`ORDERED` a closed host gives *exactly*
the same old-token states after a null is inserted.  Slow (one Python step
per contracted index): for small reproducible experiments, not training.

    >>> import torch
    >>> a = torch.randn(3, 5, dtype=torch.float64); b = torch.randn(5, 2, dtype=torch.float64)
    >>> bool((ORDERED.matmul(a, b) - a @ b).abs().max() < 1e-12)
    True
"""
from __future__ import annotations

import torch

from .errors import InvalidArgument
from .xp import TorchNamespace


class OrderedTorchNamespace(TorchNamespace):
    """:class:`TorchNamespace` with matmul / sum / mean as left folds over the reduced index."""

    name = "torch-ordered"

    def matmul(self, a, b):
        if a.ndim < 2 or b.ndim < 2:
            raise InvalidArgument(f"matmul: ordered matmul needs operands of >= 2 dims, got {a.ndim} and {b.ndim}")
        acc = a[..., :, 0:1] * b[..., 0:1, :]
        for i in range(1, a.shape[-1]):
            acc = acc + a[..., :, i:i + 1] * b[..., i:i + 1, :]
        return acc

    def sum(self, x, axis, keepdims=False):
        acc = x.select(axis, 0)
        for i in range(1, x.shape[axis]):
            acc = acc + x.select(axis, i)
        return acc.unsqueeze(axis if axis >= 0 else x.ndim + axis) if keepdims else acc

    def mean(self, x, axis, keepdims=False):
        return self.sum(x, axis, keepdims) / x.shape[axis]


ORDERED = OrderedTorchNamespace()
