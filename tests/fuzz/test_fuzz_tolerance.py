"""The differential bound of the tolerance model, and the differential contract on planted errors."""
from __future__ import annotations

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
