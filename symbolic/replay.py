"""Replay a z3 counterexample on the eager operator, in float64.

The model's inputs and parameters become float64 tensors; the law's own
relation runs on them through the *torch* namespace (the code the eager tier
runs, with the real exp and erf), and the discrepancy is measured:
``max |lhs - rhs|`` over violated equalities, ``max(lhs - rhs, 0)`` over
inequalities, NaN/inf counting as a reproduced violation (0/0 in SDPA).

A refutation *reproduces* when the discrepancy exceeds the float64 noise
bound: exact contracts (``f(0) = 0``...) need any non-zero entry; the others
need more than ``REL_NOISE * max(1, |values|)``.  Our shapes are a few
hundred float64 operations per output, each with relative error 2**-53 ~ 1.1e-16,
so honest float64 rounding stays below ~1e-13 relative; 1e-9 leaves a wide
margin, while the solver is asked for violations of at least ``MARGIN`` (0.01).
"""
from __future__ import annotations

import math

import torch

from tokenlaw.operators.xp import TORCH

from .inputs import concrete

REL_NOISE = 1e-9


def concrete_inputs(problem, values: dict) -> dict:
    """The problem's inputs and parameters as float64 values read from a model."""
    v = {name: values[name] for name in problem.inputs}
    v["params"] = concrete(problem.params, values)
    return v


def measure(problem, v) -> tuple[float, float, str]:
    """(discrepancy, bound, what) of the law's relation on concrete float64 values."""
    with torch.no_grad():
        facts = problem.relation(TORCH, v)
    worst, what, scale = 0.0, "no violated fact", 1.0
    whole = None
    for f in facts:
        if f.guard is not None and int(round(float(f.guard[0]))) != f.guard[1]:
            continue
        lhs = torch.as_tensor(f.lhs, dtype=torch.float64)
        rhs = torch.as_tensor(f.rhs, dtype=torch.float64)
        diff = (lhs - rhs).abs() if f.kind == "eq" else (lhs - rhs).clamp(min=0)
        finite = bool(torch.isfinite(lhs).all() and torch.isfinite(rhs).all())
        d = math.inf if not finite else float(diff.max()) if diff.numel() else 0.0
        scale = max(scale, _finite_max(lhs), _finite_max(rhs))
        if f.replay_only and (whole is None or d > whole[0]):
            whole = (d, f.what)
        if d > worst or (d != d):
            worst, what = d, f.what
    if whole is not None:
        what += f" (also measured on {whole[1]}: {whole[0]:.3g})"
    exact = problem.exact
    bound = 0.0 if exact else REL_NOISE * scale
    return worst, bound, what


def _finite_max(t) -> float:
    t = t[torch.isfinite(t)].abs()
    return float(t.max()) if t.numel() else 0.0


def reproduces(discrepancy: float, bound: float) -> bool:
    return discrepancy != discrepancy or discrepancy > bound
