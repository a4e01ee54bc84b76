"""What the kernels call, and the interpreter limit the backend declares (bf16 tl.dot)."""
from __future__ import annotations


import pytest
import torch
import triton
import triton.language as tl

from tokenlaw.kernels import capabilities, ops
from tokenlaw.kernels.inspection import trace_transcendentals, transcendental_names
from tokenlaw.kernels.layers import KERNELS

pytestmark = pytest.mark.skipif(not capabilities.interpreting(), reason="these tests run the CPU interpreter")


@triton.jit
def _dot_kernel(A, B, C, BM: tl.constexpr, BD: tl.constexpr):
    r = tl.arange(0, BM)
    d = tl.arange(0, BD)
    a = tl.load(A + r[:, None] * BD + d[None, :])
    b = tl.load(B + r[:, None] * BD + d[None, :])
    tl.store(C + r[:, None] * BM + r[None, :], tl.dot(a, tl.trans(b)))


def _dot(dtype):
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(16, 16, generator=g).to(dtype) for _ in range(2))
    c = torch.empty(16, 16)
    _dot_kernel[(1,)](a, b, c, BM=16, BD=16)
    return c, a.float() @ b.float().T


def test_interpreter_bf16_dot_is_wrong_which_is_why_bf16_cells_are_not_runnable():
    out, ref = _dot(torch.bfloat16)
    # values of order 1..10 come back as ~1e10: the raw bit patterns were multiplied
    assert (out - ref).abs().max() > 1e6
    assert capabilities.not_runnable(torch.bfloat16) == capabilities.BF16_INTERPRETER_BUG


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_interpreter_dot_is_right_in_fp32_and_fp16(dtype):
    out, ref = _dot(dtype)
    assert (out - ref).abs().max() < 1e-4
    assert capabilities.not_runnable(dtype) is None


def _traced(name):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 11, 4, generator=g) for _ in range(3))
    with trace_transcendentals() as calls:
        if name == "oattention_fwd":
            ops.oattention_fwd(q, k, v, torch.rand(1, 11, generator=g), None, 0.1, False)
        elif name == "sm_fir_fwd":
            ops.sm_fir_fwd(q, k, v)
        else:
            ops.pn_fir_tau_fwd(q, k, v, torch.tensor(-0.5))
    return dict(calls)


def test_pn_kernel_evaluates_no_transcendental_at_run_time():
    assert _traced("pn_fir_tau_fwd") == {}


# OAttention works in log space (exp(s + log p - M), like the eager operator); sm_fir is plain softmax.
@pytest.mark.parametrize("name,expected", [("oattention_fwd", {"exp", "log"}), ("sm_fir_fwd", {"exp"})])
def test_softmax_kernels_do_evaluate_exp(name, expected):
    calls = _traced(name)
    assert calls.get("exp", 0) > 0 and set(calls) == expected


def test_kernel_sources_name_exp_only_in_the_softmax_kernels():
    assert transcendental_names(KERNELS["pn_fir_tau_fwd"]) == {}
    for name in ("oattention_fwd", "sm_fir_fwd"):
        assert transcendental_names(KERNELS[name])["exp"] >= 2


def test_source_scan_follows_jit_helpers():
    @triton.jit
    def helper(x):
        return tl.log(x)

    @triton.jit
    def kernel(X):
        tl.store(X, helper(tl.load(X)))

    kernel.fn.__globals__["helper"] = helper
    assert transcendental_names(kernel) == {"log": 1}
