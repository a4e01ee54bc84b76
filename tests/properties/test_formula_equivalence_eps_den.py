"""formula_equivalence carries the rounding of ln eps_den outright (issue 19, fixes).

The default check failed ``oattention-formula_equivalence`` in float64 at eps_den = 1e35:
|impl - ref| = 1.66e-49 vs the probe-predicted bound 1.54e-49 (107 vs 100 u |out|).  The
stabilised form holds eps_den as exp(fl(ln eps_den)); fl64(ln 1e35) is off by 0.75 of its
half-ulp, float32's by 0.26, so the probe understated it.  The contract now adds that term
(``sequence_laws.log_held_eps_den``), computed on the direct formula.
"""
from __future__ import annotations

import dataclasses

import torch

from tokenlaw.properties import sequence_laws
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, default_registry
from tokenlaw.properties.judging import relation

REG = default_registry()
FAILED = dict(dtype="float64", seed=761, batch=1, n=2, d=8, null=(0,), pos=0, perm_seed=0, shift=0.0,
              mask_density=1.0, scale=1.0, backend="eager", near_null=(), tiny=0.0, bias_scale=1.0,
              mask_kind="random", tau=None, eps_den=1e35, heads=None, layout="contiguous", score_offset=0.0)


def _sides(case):
    def reference(dt, **overrides):
        return case.op.reference(sequence_laws.TORCH, case.x.to(dt), **case.runner.arguments(case.mask, dt, **overrides))
    return (lambda dt: case.runner.run(case.x, case.mask, dtype=dt)), reference


def test_the_replayed_failure_holds_and_failed_without_the_term():
    case = Case.from_fields(REG["oattention"], FAILED)
    v = CONTRACTS["formula_equivalence"].judge(case)
    assert not v.violated, v.detail
    impl, ref = _sides(case)
    old = relation(case, impl, ref, "without the ln eps_den term")
    assert old.violated and 1.6e-49 < old.discrepancy < 1.7e-49, old.detail
    # the term is first order in u |ln eps_den| |out|: about 80.6 u |out| here, nowhere near a free pass
    term = sequence_laws.log_held_eps_den(case, ref)
    out = float(ref(torch.float64).abs().max())
    assert 60 * 2.0 ** -53 * out < float(term.max()) < 120 * 2.0 ** -53 * out


def test_a_seeded_eps_den_bug_still_breaks_it():
    op = REG["oattention"]
    bad = dataclasses.replace(op, fn=lambda xp, x, mask=None, **kw: op.fn(
        xp, x, mask, **{**kw, "eps_den": kw["eps_den"] * (1 + 1e-9)}))       # eps_den off by 1e-9 relative
    v = CONTRACTS["formula_equivalence"].judge(Case.from_fields(bad, FAILED))
    assert v.violated and v.discrepancy > 1000 * v.bound, v.detail


def test_no_eps_den_no_term():
    case = Case.from_fields(REG["sdpa"], {**FAILED, "eps_den": None, "null": ()})
    assert sequence_laws.log_held_eps_den(case, _sides(case)[1]) == 0.0
