"""The differential bound of the tolerance model, and the differential contract on planted errors."""
from __future__ import annotations

import sys

import pytest
import torch

from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.plan import plan
from tokenlaw.properties.tolerance import K, UNIT_ROUNDOFF, differential

REG = default_registry()


def test_bound_scales_the_probe_error_by_the_unit_roundoff_ratio():
    a64 = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    a32 = a64 + torch.tensor([1e-7, 0.0, 0.0], dtype=torch.float64)
    ok = differential(a64 + 1e-4, a64, {torch.float32: a32}, torch.float16)
    predicted = K * (UNIT_ROUNDOFF[torch.float16] / UNIT_ROUNDOFF[torch.float32]) * 1e-7
    assert ok.ok and ok.bound >= predicted
    bad = differential(a64 + 0.5, a64, {torch.float32: a32}, torch.float16)
    assert not bad.ok


def test_exact_probes_demand_an_exact_answer():
    a64 = torch.tensor([0.0, 0.0], dtype=torch.float64)
    noisy = torch.tensor([0.3, 0.0], dtype=torch.float64)
    assert not differential(noisy, a64, {torch.float32: a64.clone()}, torch.bfloat16).ok
    assert differential(a64.clone(), a64, {torch.float32: a64.clone()}, torch.bfloat16).ok


def test_nan_where_float64_is_finite_is_a_violation():
    a64 = torch.tensor([1.0], dtype=torch.float64)
    assert not differential(torch.tensor([float("nan")]), a64, {torch.float32: a64}, torch.float16).ok


def test_differential_is_planned_for_every_operator_that_does_not_declare_it():
    rows = [r for r in plan(REG) if r.contract == "differential"]
    assert {r.operator for r in rows} == {op.name for op in REG}
    assert all(r.declared in ("claims", "violates") for r in rows)


def test_differential_holds_on_a_well_conditioned_half_precision_case():
    for dtype in (torch.float16, torch.bfloat16):
        v = CONTRACTS["differential"](Case(op=REG["oattention"], dtype=dtype, n=5, d=4, seed=4))
        assert v.status == "holds", v.detail


# -- planted just above the bound: a bound twice too wide fails here (issue 43, class 9) -----------------------
# The expected bound is written out from the module docstring of properties/tolerance.py, not read from the code:
# bound = K * max_P (u_D / u_P) err_P + K u_D |a_64| + K tiny_D (tiny_D: D's smallest normal), with err_P the
# probe's error (here the same at every entry, so its entrywise, relative and normwise forms coincide).
PLANT = 1.1          # planted |a_D - a_64| as a multiple of the expected bound: caught; 1 / PLANT of it: passes
K_MODEL = 8.0        # the docstring's K, stated here again: the test must not read the constant it checks


def _expected_bound(dtype, probe, err, value):
    u = lambda dt: torch.finfo(dt).eps / 2                          # noqa: E731
    return K_MODEL * (u(dtype) / u(probe)) * err + K_MODEL * u(dtype) * value + K_MODEL * torch.finfo(dtype).tiny


def _planted(dtype, probe, factor):
    a64 = torch.ones(6, dtype=torch.float64)
    err = 2.0 ** -20 if probe == torch.float32 else 2.0 ** -8        # a few ulps of the probe, exact in float64
    probes = {probe: a64 + err}
    bound = _expected_bound(dtype, probe, err, 1.0)
    aD = a64.clone()
    aD[2] += factor * bound
    return differential(aD, a64, probes, dtype)


@pytest.mark.parametrize("dtype, probe", [(torch.float16, torch.float32), (torch.bfloat16, torch.float32),
                                          (torch.float32, torch.float16), (torch.float32, torch.bfloat16)])
def test_an_error_just_above_the_differential_bound_is_caught_and_just_below_passes(dtype, probe):
    above, below = _planted(dtype, probe, PLANT), _planted(dtype, probe, 1 / PLANT)
    assert not above.ok and above.ratio < PLANT * 1.01, above.ratio
    assert below.ok, below.ratio


def test_a_differential_bound_twice_too_wide_fails_the_planted_check(monkeypatch):
    """The check above attacked: with every bound of tolerance.differential doubled, the planted error passes."""
    from tokenlaw.properties import tolerance as T
    real = T.differential

    def doubled(aD, a64, *args, **kw):
        c = real(aD, a64, *args, **kw)
        c.bound, c.ratio = 2 * c.bound, c.ratio / 2
        return c
    monkeypatch.setattr(sys.modules[__name__], "differential", doubled)
    assert _planted(torch.float16, torch.float32, PLANT).ok          # the wide bound lets the planted error through
    monkeypatch.setattr(T, "K", 2 * K)                               # the same through the model's constant
    assert real(*_plant_args(torch.float32, torch.float16)).ok


def _plant_args(dtype, probe):
    a64 = torch.ones(6, dtype=torch.float64)
    err = 2.0 ** -8
    aD = a64.clone()
    aD[2] += PLANT * _expected_bound(dtype, probe, err, 1.0)
    return aD, a64, {probe: a64 + err}, dtype


def test_the_eager_float32_differential_is_judged_and_catches_a_planted_float32_error(monkeypatch):
    """Eager float32 is judged against float64 (the half formats predict its error): a 1e-4 relative error in
    float32 only is a violation; the shipping operator holds the same case."""
    case = Case(op=REG["oattention"], dtype=torch.float32, n=5, d=4, seed=4)
    ok = CONTRACTS["differential"](case)
    assert ok.status == "holds" and not ok.inconclusive and "half formats" in ok.detail, ok.detail
    from tokenlaw.operators import oattention as oa_module
    core = oa_module.oattention_core

    def off(xp, q, *a, **kw):
        out = core(xp, q, *a, **kw)
        return out * (1 + 1e-4) if q.dtype == torch.float32 else out
    monkeypatch.setattr(oa_module, "oattention_core", off)
    bad = CONTRACTS["differential"](Case(op=REG["oattention"], dtype=torch.float32, n=5, d=4, seed=4))
    assert bad.violated, bad.detail
