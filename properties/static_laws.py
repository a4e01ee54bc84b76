"""Contracts about how the operator computes: transcendental calls and gradients."""
from __future__ import annotations

import collections

import torch
from torch.overrides import TorchFunctionMode

from tokenlaw.operators.xp import TORCH, Recording

from . import backends
from . import verdict as V
from .contract import FuzzOptions, SymbolicOptions, contract

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 50


@contract(exact=True, dtypes=("float64",),
          symbolic=SymbolicOptions(none="a property of the trace itself (which primitives run), judged by the "
                                        "eager tier"),
          evaluated="trace")
def zero_transcendental(case):
    """Evaluating the operator calls no exp, log, tanh or erf."""
    if not case.implementation.reference:     # what the backend's implementation evaluates on this case
        calls = case.implementation.transcendentals(case.op, case)
        if calls is None:
            raise backends.Unanswerable(f"the {case.backend} backend cannot say which transcendental "
                                        "functions it evaluates")
        n = sum(calls.values())
        return V.judge(n, 0, f"{case.backend} backend evaluated {calls or 'no transcendental'}")
    # Two witnesses: the xp primitives the operator calls, and every torch function or
    # tensor method that runs underneath (an operator calling torch.softmax directly
    # bypasses xp, but not torch's function mode).
    rec, seen = Recording(TORCH), _TorchTranscendentals()
    with torch.no_grad(), seen:
        case.op.fn(rec, case.x, **case.arguments(case.mask, torch.float64))
    calls = dict(rec.transcendental_calls)
    for name, k in seen.calls.items():
        calls[f"torch.{name}"] = k
    n = sum(calls.values())
    return V.judge(n, 0, f"transcendental calls traced: {calls or 'none'}; all primitives: {dict(rec.calls)}")


# torch functions / tensor methods that evaluate exp, log or a function built on them
_TORCH_TRANSCENDENTAL = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "softmax", "log_softmax", "logsumexp",
    "sigmoid", "logsigmoid", "tanh", "erf", "erfc", "erfinv", "gelu", "silu", "softplus", "xlogy", "lgamma",
})


def _non_integer_power(args) -> bool:
    exponent = args[1] if len(args) > 1 else None
    if torch.is_tensor(exponent):
        return bool((exponent != exponent.round()).any())
    return isinstance(exponent, float) and not exponent.is_integer()


class _TorchTranscendentals(TorchFunctionMode):
    """Count torch-level calls that evaluate a transcendental function (x ** 0.5 included)."""

    def __init__(self):
        super().__init__()
        self.calls: collections.Counter = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "").strip("_")
        if name in _TORCH_TRANSCENDENTAL or (name in ("pow", "rpow", "float_power") and _non_integer_power(args)):
            self.calls[name] += 1
        return func(*args, **(kwargs or {}))


# fuzz: two forward passes per input entry (small shapes), and finite differences at eps = 1e-6 only
# approximate the Jacobian where the function is smooth on that scale (no huge scores, no fully
# masked rows whose softmax is 0/0, no near-null rows at the kink of |h|^2 / (tau + |h|^2)).
@contract(exact=False, dtypes=("float64",),
          symbolic=SymbolicOptions(none="a float64 finite-difference check: no real-arithmetic statement"),
          evaluated="reference",
          unjudged="finite differences in float64, which an implementation other than the reference need not "
                   "compute; its backward is judged by gradient_agreement against the float64 eager gradients",
          fuzz=FuzzOptions(n_max=3, n_long=0, batch_max=1, widths=(3, 4), scales=(1.0,), bias_scales=(1.0,),
                     mask_kinds=("random", "causal", "padding"), near_null=False, wide_params=False, offsets=False,
                     eps_draws=False))
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
