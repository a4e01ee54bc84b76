"""Compiled kernels on a CUDA GPU, bf16 included (the interpreter cannot judge bf16).

Marked ``gpu``: they run in a pytest session that chose the GPU (``--triton=gpu``, or ``auto`` on a
machine with one; see ``tests/conftest.py``) and are skipped with the reason otherwise.
"""
from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["oattention_fwd", "sm_fir_fwd", "pn_fir_tau_fwd"])
@pytest.mark.parametrize("n,dh", [(1, 16), (100, 64), (333, 128)])
def test_compiled_kernel_is_no_worse_than_eager_in_the_same_dtype(name, dtype, n, dh):
    from tokenlaw.kernels import ops

    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(2, 4, n, dh, generator=g, device="cuda").to(dtype) for _ in range(3))
    p = torch.rand(2, n, generator=g, device="cuda")
    p[:, ::7] = 0.0
    ref_fn = getattr(ops, name.replace("_fwd", "_reference"))
    extra = {"oattention_fwd": (p, None, 1e-3, False), "sm_fir_fwd": (), "pn_fir_tau_fwd": (torch.tensor(0.0, device="cuda"),)}[name]
    out = getattr(ops, name)(q, k, v, *extra).double()
    ref = ref_fn(q.double(), k.double(), v.double(), *[e.double() if torch.is_tensor(e) else e for e in extra])
    same = ref_fn(q, k, v, *[e.to(dtype) if torch.is_tensor(e) else e for e in extra]).double()
    u = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[dtype]
    assert (out - ref).abs().max() <= 8 * max(float((same - ref).abs().max()), u * float(ref.abs().max()))
    if name == "oattention_fwd":
        z = out[:, :, ::7]
        assert torch.equal(z, torch.zeros_like(z))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["oattention_fwd", "sm_fir_fwd", "pn_fir_tau_fwd"])
@pytest.mark.parametrize("n,dh", [(1, 16), (100, 64), (333, 128)])
def test_compiled_backward_is_no_worse_than_eager_in_the_same_dtype(name, dtype, n, dh):
    """The fused backward's gradients vs float64, against the eager gradients' own error in the same dtype."""
    from tokenlaw.kernels import ops

    g = torch.Generator(device="cuda").manual_seed(1)
    base = [torch.randn(2, 4, n, dh, generator=g, device="cuda") for _ in range(3)]
    extra = {"oattention_fwd": [torch.rand(2, n, generator=g, device="cuda")], "sm_fir_fwd": [],
             "pn_fir_tau_fwd": [torch.tensor(0.0, device="cuda")]}[name]
    fixed = (None, 1e-3, False) if name == "oattention_fwd" else ()
    w = torch.randn(2, 4, n, dh, generator=g, device="cuda")
    ref_fn = getattr(ops, name.replace("_fwd", "_reference"))

    def grads(fn, dt):
        leaves = [t.to(dt).requires_grad_() for t in base + extra]
        out = fn(*leaves, *fixed)
        return [x.double() for x in torch.autograd.grad(out, leaves, w.to(out.dtype))]

    fused, exact, same = grads(getattr(ops, name), dtype), grads(ref_fn, torch.float64), grads(ref_fn, dtype)
    u = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[dtype]
    for a, r, e in zip(fused, exact, same):
        assert (a - r).abs().max() <= 8 * max(float((e - r).abs().max()), u * float(r.abs().max()))
