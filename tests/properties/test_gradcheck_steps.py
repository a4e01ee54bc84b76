"""gradcheck tells finite-difference truncation from a wrong gradient (issue 19, seed 3).

The default check, seed 3, standard_host-gradcheck float64: n = 1, the one token null, d = 4.  The
host's first LayerNorm sits at h = 0, slope 1/sqrt(eps_ln) = 316: central differences at torch's step
1e-6 miss the analytic Jacobian by 0.025 (truncation, h^2 f'''/6), falling 100-fold per decade of h.
"""
from __future__ import annotations

import types

import torch

from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.static_laws import gradcheck


def test_the_seed3_null_token_is_truncation_only():
    case = Case(op=default_registry()["standard_host"], dtype=torch.float64, seed=292, batch=1, n=1, d=4, null=[0])
    v = gradcheck(case)
    assert v.status == "holds" and "truncation only" in v.detail, v.detail


class _Scaled(torch.autograd.Function):
    """sin(x) whose backward is off by a relative ``k`` (a seeded gradient bug)."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.cos(x) * (1 + ctx.k), None


def _case(fn, x):
    return types.SimpleNamespace(x=x, mask=None, runner=types.SimpleNamespace(arguments=lambda mask, dtype: {}),
                                 op=types.SimpleNamespace(fn=lambda xp, inp: fn(inp)))


def test_a_wrong_gradient_that_fails_at_every_step_is_a_violation():
    x = torch.linspace(-1, 1, 6, dtype=torch.float64).reshape(1, 2, 3)
    v = gradcheck(_case(lambda t: _Scaled.apply(t, 1e-2), x))
    assert v.violated and "does not converge" in v.detail, v.detail


def test_a_correct_gradient_passes_at_the_first_step():
    x = torch.linspace(-1, 1, 6, dtype=torch.float64).reshape(1, 2, 3)
    v = gradcheck(_case(lambda t: _Scaled.apply(t, 0.0), x))
    assert v.status == "holds" and "truncation" not in v.detail, v.detail


def test_a_sharp_but_correct_function_is_truncation_only():
    """Curvature on the 1e-6 scale: tanh(x / 1e-5) near 0 (slope 1e5, truncation ~ 300 at h = 1e-6)."""
    x = torch.tensor([[[1e-6, -2e-6, 5e-7]]], dtype=torch.float64)
    v = gradcheck(_case(lambda t: torch.tanh(t / 1e-5), x))
    assert v.status == "holds" and "truncation only" in v.detail, v.detail


def test_a_small_gradient_bug_hidden_by_truncation_is_still_found():
    """Both at once: sharp curvature and a backward off by 1 %: the mismatch stops falling at the bug."""
    x = torch.tensor([[[1e-6, -2e-6, 5e-7]]], dtype=torch.float64)

    class Sharp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return torch.tanh(t / 1e-5)

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * (1 - torch.tanh(t / 1e-5) ** 2) / 1e-5 * 1.01

    v = gradcheck(_case(Sharp.apply, x))
    assert v.violated, v.detail
