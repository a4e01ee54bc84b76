"""Contracts about how the operator computes: transcendental calls and gradients."""
from __future__ import annotations

import collections

import torch
from torch.overrides import TorchFunctionMode

from tokenlaw.operators.errors import NotRunnableHere
from tokenlaw.operators.xp import TORCH, Recording

from . import backends
from . import verdict as V
from .contract import AdversaryOptions, FuzzOptions, SHARED_AXES, SymbolicOptions, contract

# Where the catalogue lists this module's laws (tokenlaw.properties.catalogue.laws_modules).
ORDER = 50


@contract(exact=True, dtypes=("float64",),
          symbolic=SymbolicOptions(none="a property of the trace itself (which primitives run), judged by the "
                                        "eager tier"),
          evaluated="trace",
          adversary=AdversaryOptions(scale_blind=SHARED_AXES))
def zero_transcendental(case):
    """Evaluating the operator calls no exp, log, tanh or erf."""
    if not case.runner.implementation.reference:     # what the backend's implementation evaluates on this case
        calls = case.runner.implementation.transcendentals(case.op, case)
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
        case.op.fn(rec, case.x, **case.runner.arguments(case.mask, torch.float64))
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
                     eps_draws=False),
          adversary=AdversaryOptions(last=True, scale_blind=SHARED_AXES))
def gradcheck(case):
    """Analytic float64 gradients match finite differences (torch.autograd.gradcheck)."""
    x = case.x.clone().requires_grad_(True)
    kwargs = case.runner.arguments(case.mask, torch.float64)

    def f(inp):
        return case.op.fn(TORCH, inp, **kwargs)

    try:
        torch.autograd.gradcheck(f, (x,), eps=STEPS[0], atol=1e-5, rtol=1e-3, raise_exception=True)
    except NotRunnableHere:
        raise                               # no backward on this machine: not runnable here (Contract.judge)
    except Exception as err:  # gradcheck reports a mismatch by raising
        first = str(err).splitlines()[0][:300]
        if "Jacobian mismatch" not in first:
            return V.violated(float("inf"), 0.0, f"gradcheck failed: {first}")
        return _refined(f, x, first)
    return V.holds(0.0, 0.0, f"gradcheck passed (eps {STEPS[0]:g}, atol 1e-5, rtol 1e-3: torch's documented defaults)")


# Central differences err by h^2 |f'''| / 6 (truncation) plus u |f| / h (rounding).  Where the function
# bends on the scale of torch's step 1e-6 (a LayerNorm at a null token has slope 1/sqrt(eps_ln) ~ 316 and
# a third derivative ~ eps_ln^-3/2), truncation alone fails gradcheck for a correct gradient.  Truncation
# falls 100-fold per decade of h; a wrong analytic gradient leaves a mismatch that does not fall at all.
# So a mismatch at 1e-6 is re-read at 1e-7 and 1e-8: it holds only if it falls at least CONVERGENCE-fold per
# decade at both steps (quadratic convergence onto the analytic Jacobian, with room for rounding) and
# gradcheck's own tolerance is met at the finest step.  Rounding at 1e-8 is u |f| / h ~ 1e-8 |f|: far
# below gradcheck's atol for the O(1e3) outputs drawn here.
STEPS = (1e-6, 1e-7, 1e-8)
CONVERGENCE = 30.0


def _refined(f, x, first: str) -> V.Verdict:
    with torch.no_grad():
        y = f(x)
    analytic = torch.autograd.functional.jacobian(f, x).reshape(y.numel(), x.numel())
    gaps = [float((_central(f, x, h) - analytic).abs().max()) for h in STEPS]
    trail = ", ".join(f"{g:.3g} at h={h:g}" for g, h in zip(gaps, STEPS))
    falls = all(b * CONVERGENCE <= a for a, b in zip(gaps, gaps[1:]))
    try:
        ok = falls and torch.autograd.gradcheck(f, (x,), eps=STEPS[-1], atol=1e-5, rtol=1e-3, raise_exception=False)
    except Exception:                       # gradcheck can raise for reasons other than a mismatch
        ok = False
    if ok:
        return V.holds(0.0, 0.0, f"gradcheck at h={STEPS[0]:g} failed on truncation only: the finite-difference "
                       f"mismatch falls as h^2 onto the analytic Jacobian ({trail}; at least {CONVERGENCE:g}-fold per "
                       f"decade) and gradcheck passes at h={STEPS[-1]:g}")
    return V.violated(float("inf"), 0.0, f"gradcheck failed: {first}; the mismatch does not converge as h "
                      f"shrinks ({trail}): the analytic Jacobian is not the derivative")


def _central(f, x, h: float) -> torch.Tensor:
    """The central-difference Jacobian at step h, one column per input entry."""
    with torch.no_grad():
        base = x.detach()
        cols = []
        for i in range(base.numel()):
            e = torch.zeros_like(base)
            e.view(-1)[i] = h
            cols.append(((f(base + e) - f(base - e)) / (2 * h)).reshape(-1))
        return torch.stack(cols, dim=1)
