"""Up-front argument validation for the eager operators.

Every check raises :class:`~tokenlaw.operators.errors.InvalidArgument` naming
the argument and what was expected.  Symbolic arrays (numpy object arrays)
are shape-checked only: their dtype and value checks are the solver's job.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch

from .errors import InvalidArgument

FLOAT_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _is_concrete(x) -> bool:
    return torch.is_tensor(x)


def tokens(x, name="x", *, d_model=None):
    """x must be a floating tensor of shape (batch, tokens, features)."""
    if not (torch.is_tensor(x) or isinstance(x, np.ndarray)):
        raise InvalidArgument(f"{name}: expected a tensor of shape (batch, tokens, features), got {type(x).__name__}")
    if x.ndim != 3:
        raise InvalidArgument(f"{name}: expected 3 dims (batch, tokens, features), got shape {tuple(x.shape)}")
    if x.shape[1] < 1 or x.shape[2] < 1:
        raise InvalidArgument(f"{name}: needs at least one token and one feature, got shape {tuple(x.shape)}")
    if d_model is not None and x.shape[2] != d_model:
        raise InvalidArgument(f"{name}: expected {d_model} features, got {x.shape[2]}")
    if _is_concrete(x) and x.dtype not in FLOAT_DTYPES:
        raise InvalidArgument(f"{name}: expected a floating dtype {[str(d) for d in FLOAT_DTYPES]}, got {x.dtype}")
    return x


def mask(m, x, name="mask"):
    """m must be (tokens, tokens) or (batch, tokens, tokens) with entries 0/1."""
    if m is None:
        return None
    b, n = x.shape[0], x.shape[1]
    if not (torch.is_tensor(m) or isinstance(m, np.ndarray)):
        raise InvalidArgument(f"{name}: expected a 0/1 tensor, got {type(m).__name__}")
    if tuple(m.shape) not in ((n, n), (b, n, n), (1, n, n)):
        raise InvalidArgument(
            f"{name}: expected shape ({n}, {n}) or ({b}, {n}, {n}) for x of shape {tuple(x.shape)}, got {tuple(m.shape)}")
    if _is_concrete(m):
        if m.dtype == torch.bool:
            return m.to(x.dtype)
        if not m.is_floating_point() and m.dtype not in (torch.int64, torch.int32, torch.uint8):
            raise InvalidArgument(f"{name}: expected bool or 0/1 entries, got dtype {m.dtype}")
        if not bool(((m == 0) | (m == 1)).all()):
            raise InvalidArgument(f"{name}: entries must be 0 or 1 (1 = visible)")
        return m.to(x.dtype)
    return m


def positive(value, name):
    """A strictly positive finite scalar (tau, eps_den, eps...)."""
    if torch.is_tensor(value):
        if value.numel() != 1:
            raise InvalidArgument(f"{name}: expected a scalar, got shape {tuple(value.shape)}")
        if not value.is_floating_point():
            raise InvalidArgument(f"{name}: expected a floating scalar, got dtype {value.dtype}")
        v = float(value.detach())
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = float(value)
    else:
        return value  # symbolic: the solver carries the assumption
    if not (v > 0 and np.isfinite(v)):
        raise InvalidArgument(f"{name}: must be > 0 and finite, got {v}")
    return value


def finite_scalar(value, name):
    """Any finite real scalar (e.g. pn_fir_tau's learnable threshold)."""
    if torch.is_tensor(value):
        if value.numel() != 1 or not value.is_floating_point():
            raise InvalidArgument(f"{name}: expected a floating scalar, got shape {tuple(value.shape)} dtype {value.dtype}")
        v = float(value.detach())
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = float(value)
    else:
        return value
    if not np.isfinite(v):
        raise InvalidArgument(f"{name}: must be finite, got {v}")
    return value


def heads(h, d_model, name="heads"):
    if not isinstance(h, int) or isinstance(h, bool) or h < 1:
        raise InvalidArgument(f"{name}: expected a positive int, got {h!r}")
    if d_model % h:
        raise InvalidArgument(f"{name}: {h} does not divide the model width {d_model}")
    return h


def weight(w, shape, name):
    """A projection matrix or bias of exactly ``shape``: never broadcast."""
    if w is None:
        return None
    if tuple(w.shape) != tuple(shape):
        raise InvalidArgument(f"{name}: expected shape {tuple(shape)}, got {tuple(w.shape)}")
    return w
