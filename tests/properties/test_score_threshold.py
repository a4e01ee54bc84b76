"""Score laws set aside rows at a rectified normaliser's threshold, as the differential contract does.

Found by the default check at seed 1 after issue 19's wider draws: pn_fir_c's score-shift invariance in
bfloat16, n = 2, scores ~ 100 (bfloat16 spacing 0.5): a row's two centred scores are +-(s1 - s0)/2, and
rounding S + c can flip their sign, moving the whole mass between the keys (discrepancy 1 against 0.0625).
No rounding-error bound exists there; the rows near the threshold are set aside on both sides, counted.
"""
from __future__ import annotations

import torch

from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, default_registry
from tokenlaw.properties.score_laws import at_threshold

REG = default_registry()
FOUND = dict(dtype="bfloat16", seed=95, batch=4, n=2, d=4, null=(), pos=0, perm_seed=0, shift=1.625,
             mask_density=1.0, scale=10.0, backend="eager", near_null=(), tiny=0.0, bias_scale=1.0,
             mask_kind="random", tau=None, eps_den=None, heads=None, layout="contiguous", score_offset=0.0)


def test_the_found_case_holds_with_its_threshold_rows_set_aside():
    v = CONTRACTS["score_shift_invariance"].judge(Case.from_fields(REG["pn_fir_c"], FOUND))
    assert v.status == "holds" and v.extra["set_aside_threshold"] > 0, v.detail
    assert not v.inconclusive               # some rows were judged


def test_an_uncentred_normaliser_still_breaks_the_law_beside_the_set_aside():
    # pn (no centring) is declared to violate shift invariance: the set-aside must not hide it
    case = Case.from_fields(REG["pn"], {**FOUND, "dtype": "float32", "shift": 3.0})
    assert CONTRACTS["score_shift_invariance"].judge(case).violated


def test_operators_without_a_threshold_set_nothing_aside():
    case = Case.from_fields(REG["sm_fir"], {**FOUND, "dtype": "float32"})
    s = torch.zeros(case.batch, case.n, case.n, dtype=torch.float64)
    assert at_threshold(case, s) is None


def test_gate_below_one_is_not_judged_where_the_dtype_cannot_resolve_its_premise():
    """The baseline's smoke run, Triton float32, tau = 1e21: S - tau came out 6.5e13 (mass 1), a rounding of S
    at |tau| no float32 implementation avoids.  Past |tau| = 1 / (16 u) the example is inconclusive; below it
    the law is judged (and a gate that saturates is still caught there: tests/fuzz/test_fuzz_mutants.py)."""
    from tokenlaw.properties.catalogue import CONTRACTS, default_registry
    from tokenlaw.properties.case import Case

    law, op = CONTRACTS["gate_below_one"], default_registry()["pn_fir_tau"]
    far = law(Case(op=op, dtype=torch.float32, seed=0, batch=1, n=2, d=4, tau=1e21))
    assert far.inconclusive and not far.violated and "cannot resolve" in far.detail
    near = law(Case(op=op, dtype=torch.float32, seed=0, batch=1, n=2, d=4, tau=1e5))
    assert not near.inconclusive and near.status == "holds", near.detail
    assert law(Case(op=op, dtype=torch.bfloat16, seed=0, batch=1, n=2, d=4, tau=100.0)).inconclusive
