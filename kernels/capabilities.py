"""What the Triton backend can run, and where: dtypes, head dims, tiles, interpreter limits.

The suite asks this module before running a cell on the kernel backend, so a
cell the backend cannot judge honestly is reported *not runnable* with the
reason, never silently passed.  The one known interpreter limit: the CPU
interpreter's bf16 ``tl.dot`` multiplies the raw bit patterns of its operands
instead of their values (triton-lang/triton#11584), so every bf16 kernel
result under ``TRITON_INTERPRET=1`` is wrong (see
``tests/kernels/test_kernels_interpreter.py``, which shows it).
"""
from __future__ import annotations

import os

import torch

KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
HEAD_DIM_MAX = 128          # one (BLOCK_M, BLOCK_D) query tile stays in registers up to 128
BF16_INTERPRETER_BUG = ("the Triton CPU interpreter's bf16 tl.dot multiplies raw bit patterns "
                        "(triton-lang/triton#11584): bf16 kernel results are wrong under TRITON_INTERPRET=1")


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def not_runnable(dtype: torch.dtype) -> str | None:
    """Why kernels cannot be judged in ``dtype`` here, or None when they can."""
    if dtype == torch.float64:
        return "kernels compute in fp32/fp16/bf16; float64 is the reference precision"
    if dtype not in KERNEL_DTYPES:
        return f"dtype {dtype} is not a kernel dtype {[str(d) for d in KERNEL_DTYPES]}"
    if dtype == torch.bfloat16 and interpreting():
        return BF16_INTERPRETER_BUG
    if not interpreting() and not torch.cuda.is_available():
        return "no GPU and TRITON_INTERPRET is not set: kernels cannot run"
    return None


def _pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def tiles(n: int, head_dim: int) -> dict:
    """Tile sizes for a launch.

    Compiled (GPU): 64 x 64 tiles, head dim padded to a power of two >= 16
    (``tl.dot`` needs every dimension >= 16).  Interpreter: 8 x 8 tiles and
    the head dim padded only to a power of two, so the suite's short
    sequences (n <= N_MAX = 12) already cross tile edges, the place where
    halos, running maxima and masks break.  (Every interpreted operation
    costs the same whatever the tile size, so fewer, larger tiles are
    faster; 8 is the smallest size that keeps a full 6-row FIR halo
    inside the previous tile.)
    """
    if interpreting():
        return dict(BLOCK_M=8, BLOCK_N=8, BLOCK_D=_pow2(head_dim))
    block = 64 if n > 32 else 16
    return dict(BLOCK_M=block, BLOCK_N=block, BLOCK_D=max(16, _pow2(head_dim)))


def describe() -> dict:
    """The backend's declared capabilities (for reports and docs)."""
    return dict(dtypes=[str(d).replace("torch.", "") for d in KERNEL_DTYPES], head_dims=f"1..{HEAD_DIM_MAX}",
                interpreter=interpreting(), tiles=tiles(8, 16),
                interpreter_limits={"bfloat16": BF16_INTERPRETER_BUG} if interpreting() else {})


# Longest sequence the suite draws on the kernel backend: with the
# interpreter's 8-token tiles, n from 9 to 12 spans two tiles, and a FIR
# halo reaches 6 rows back into the previous one.
N_MAX = 12
