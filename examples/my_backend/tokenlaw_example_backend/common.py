"""What both implementations share: argument checks, heads, the accumulation dtype, counted exp/log."""
from __future__ import annotations

import collections
import math

import torch
from torch.overrides import TorchFunctionMode

from tokenlaw import InvalidArgument


TRANSCENDENTAL = frozenset({"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sigmoid", "erf",
                            "erfc", "softmax", "log_softmax", "sin", "cos", "pow", "float_power"})


class CountTranscendentals(TorchFunctionMode):
    """Counts every torch exp/log/tanh/... call (function or method) evaluated inside the ``with`` block.

    ``pow`` counts only with a non-integer exponent (x ** 2 is a multiplication).
    """

    def __init__(self):
        super().__init__()
        self.calls = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "").strip("_")
        if name in TRANSCENDENTAL and not (name in ("pow", "float_power") and _integer_exponent(args)):
            self.calls[name] += 1
        return func(*args, **(kwargs or {}))


def _integer_exponent(args) -> bool:
    e = args[1] if len(args) > 1 else None
    return isinstance(e, int) or (isinstance(e, float) and e.is_integer())


def accumulation(dtype: torch.dtype) -> torch.dtype:
    """float32 accumulation for every low-precision dtype, float64 for float64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def split_heads(t, heads: int, acc: torch.dtype):
    """(B, N, D) -> (B, heads, N, D // heads), upcast to the accumulation dtype."""
    b, n, d = t.shape
    return t.reshape(b, n, heads, d // heads).transpose(1, 2).to(acc)


def merge_heads(o, dtype: torch.dtype):
    """(B, heads, N, dh) -> (B, N, heads * dh), rounded to the caller's dtype."""
    b, h, n, dh = o.shape
    return o.to(dtype).transpose(1, 2).reshape(b, n, h * dh)


def check_tokens(x, weights: dict, heads):
    """x is (batch, tokens, width) floating; projections (width, width), biases (width,); heads divides width."""
    if not torch.is_tensor(x) or x.ndim != 3 or not x.is_floating_point():
        raise InvalidArgument(f"x: expected a floating (batch, tokens, width) tensor, got "
                              f"{getattr(x, 'shape', type(x).__name__)}")
    d = x.shape[-1]
    for name, w in weights.items():
        want = (d,) if name.startswith("b") else (d, d)
        if tuple(w.shape) != want:
            raise InvalidArgument(f"{name}: expected shape {want}, got {tuple(w.shape)}")
    if not isinstance(heads, int) or heads < 1 or d % heads:
        raise InvalidArgument(f"heads: expected a positive divisor of the width {d}, got {heads!r}")


def scalar(value) -> float:
    return float(value.detach()) if torch.is_tensor(value) else float(value)


def check_positive(value, name: str):
    if not scalar(value) > 0:
        raise InvalidArgument(f"{name}: expected > 0, got {scalar(value)}")


def check_finite(value, name: str):
    if not math.isfinite(scalar(value)):
        raise InvalidArgument(f"{name}: expected a finite number, got {scalar(value)}")
