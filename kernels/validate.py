"""Argument checks for the kernel wrappers: bad input is rejected here, never inside a kernel.

Every check raises :class:`~tokenlaw.operators.errors.InvalidArgument` naming
the argument and the reason, with the eager operators' rules
(``operators/arguments.py``): finite values, no meta tensors, 0/1 masks,
scalars that are Python reals or 0-d tensors.  Non-contiguous tensors are
fine: the wrappers pass strides, so any layout whose last-but-one axis is the
token axis works.  :func:`error_inputs` generates the bad calls every custom
op must reject (``tests/operators/test_bad_inputs.py``).
"""
from __future__ import annotations

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument

from .capabilities import BF16_INTERPRETER_BUG, HEAD_DIM_MAX, KERNEL_DTYPES, interpreting


def heads_tensors(**named) -> tuple:
    """q, k, v of one shape (B, H, N, dh), one kernel dtype, one device; returns (B, H, N, dh)."""
    shape = dtype = device = None
    for name, t in named.items():
        if not torch.is_tensor(t):
            raise InvalidArgument(f"{name}: expected a tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise InvalidArgument(f"{name}: expected (batch, heads, tokens, head_dim), got shape {tuple(t.shape)}")
        if t.dtype not in KERNEL_DTYPES:
            raise InvalidArgument(f"{name}: kernels take {[str(d) for d in KERNEL_DTYPES]}, got {t.dtype}")
        if t.dtype == torch.bfloat16 and interpreting():
            raise InvalidArgument(f"{name}: bfloat16 is refused under TRITON_INTERPRET=1: {BF16_INTERPRETER_BUG}")
        if shape is None:
            shape, dtype, device, first = tuple(t.shape), t.dtype, t.device, name
        if tuple(t.shape) != shape:
            raise InvalidArgument(f"{name}: shape {tuple(t.shape)} differs from {first}'s {shape}")
        if t.dtype != dtype:
            raise InvalidArgument(f"{name}: dtype {t.dtype} differs from {first}'s {dtype} (no silent casts)")
        if t.device != device:
            raise InvalidArgument(f"{name}: device {t.device} differs from {first}'s {device}")
        arguments.device(t, name)
        arguments.finite(t, name)
    device_ok(next(iter(named.values())), first)
    b, h, n, dh = shape
    if n < 1:
        raise InvalidArgument(f"{first}: needs at least one token, got shape {shape}")
    if not 1 <= dh <= HEAD_DIM_MAX:
        raise InvalidArgument(f"{first}: head dim {dh} unsupported (kernels take 1..{HEAD_DIM_MAX})")
    return shape


def layer_input(x, name="x"):
    """The layer entry points' own checks on the user's tensor, so no error names an internal q or p."""
    if x.dtype not in KERNEL_DTYPES:
        raise InvalidArgument(f"{name}: kernels take {[str(d) for d in KERNEL_DTYPES]}, got {x.dtype} "
                              "(float64 runs on the eager operator)")
    if x.dtype == torch.bfloat16 and interpreting():
        raise InvalidArgument(f"{name}: bfloat16 is refused under TRITON_INTERPRET=1: {BF16_INTERPRETER_BUG}")
    device_ok(x, name)
    return x


def device_ok(t, name):
    """A GPU tensor when compiled; any device under the interpreter (which runs on the host)."""
    if not interpreting() and t.device.type != "cuda":
        raise InvalidArgument(f"{name}: compiled kernels need a CUDA tensor, got device {t.device} "
                              "(set TRITON_INTERPRET=1 to run on the CPU interpreter)")


def token_vector(p, name, b, n, like):
    """Per-token presence (B, N) on ``like``'s device, any float dtype (cast to fp32 for the kernel)."""
    if not torch.is_tensor(p) or not p.is_floating_point():
        raise InvalidArgument(f"{name}: expected a floating tensor of shape ({b}, {n})")
    if tuple(p.shape) != (b, n):
        raise InvalidArgument(f"{name}: expected shape ({b}, {n}), got {tuple(p.shape)}")
    arguments.device(p, name, like, "q")
    arguments.finite(p, name)
    if bool((p < 0).any()):
        raise InvalidArgument(f"{name}: presence must be >= 0")
    return p


def visibility(mask, name, b, n, like):
    """None or a 0/1 (N, N) / (1|B, N, N) mask (bool, int or float); returns a (1|B, N, N) view."""
    if mask is None:
        return None
    if not torch.is_tensor(mask):
        raise InvalidArgument(f"{name}: expected a 0/1 tensor, got {type(mask).__name__}")
    arguments.device(mask, name, like, "q")
    if mask.ndim == 2:
        mask = mask[None]
    if mask.ndim != 3 or tuple(mask.shape[1:]) != (n, n) or mask.shape[0] not in (1, b):
        raise InvalidArgument(f"{name}: expected shape ({n}, {n}) or (1|{b}, {n}, {n}), got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        return mask.to(torch.uint8)
    if not mask.is_floating_point() and mask.dtype not in arguments.MASK_INT_DTYPES:
        raise InvalidArgument(f"{name}: expected bool or 0/1 entries of an integer or floating dtype, got {mask.dtype}")
    # The forward treats any non-zero entry as visible and the backward multiplies by the mask:
    # only 0/1 keeps them the same function.
    bad = ~((mask == 0) | (mask == 1))
    if bool(bad.any()):
        raise InvalidArgument(f"{name}: entries must be 0 or 1 exactly (1 = visible), "
                              + arguments.found_value(mask, bad))
    return mask


def scalar(value, name, *, positive=False):
    """A finite Python real or 0-d tensor (never a bool, string or broadcastable tensor); with ``positive`` > 0."""
    v = arguments.scalar_value(value, name)
    if v is None:
        raise InvalidArgument(f"{name}: expected a real scalar, got {value!r:.40}")
    if v != v or v in (float("inf"), float("-inf")):
        raise InvalidArgument(f"{name}: expected a finite scalar, got {v}")
    if positive and v <= 0:
        raise InvalidArgument(f"{name}: expected > 0, got {v}")
    return v


def error_inputs(kwargs: dict):
    """The bad calls a custom op (q, k, v and its own arguments) must reject, each naming its argument."""
    return arguments.error_inputs(kwargs, tokens=(), scalars=("eps_den", "tau"), any_float=("p",), like="q",
                                     typed=True)
