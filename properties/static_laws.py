"""Contracts about how the operator computes: transcendental calls and gradients."""
from __future__ import annotations

import torch

from tokenlaw.operators.xp import TORCH, Recording

from . import verdict as V
from .catalogue import contract


@contract(exact=True, dtypes=("float64",))
def zero_transcendental(case):
    """Evaluating the operator calls no exp, log, tanh or erf."""
    if case.backend != "eager":   # the kernel's own calls, traced in the interpreter or read from its source
        from tokenlaw.kernels.kernel_laws import kernel_transcendentals

        return kernel_transcendentals(case)
    rec = Recording(TORCH)
    with torch.no_grad():
        case.op.fn(rec, case.x, **case.arguments(case.mask, torch.float64))
    calls = rec.transcendental_calls
    n = sum(calls.values())
    return V.judge(n, 0, f"transcendental calls traced: {dict(calls) or 'none'}; all primitives: {dict(rec.calls)}")


@contract(exact=False, dtypes=("float64",))
def gradcheck(case):
    """Analytic float64 gradients match finite differences (torch.autograd.gradcheck)."""
    x = case.x.clone().requires_grad_(True)
    kwargs = case.arguments(case.mask, torch.float64)

    def f(inp):
        return case.op.fn(TORCH, inp, **kwargs)

    try:
        ok = torch.autograd.gradcheck(f, (x,), eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True)
    except Exception as err:  # gradcheck reports a mismatch by raising
        return V.violated(float("inf"), 0.0, f"gradcheck failed: {str(err).splitlines()[0][:300]}")
    return V.holds(0.0, 0.0, "gradcheck passed (eps 1e-6, atol 1e-5, rtol 1e-3: torch's documented defaults)") if ok else \
        V.violated(float("inf"), 0.0, "gradcheck returned False")
