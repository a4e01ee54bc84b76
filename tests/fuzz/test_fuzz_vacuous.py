"""Vacuous is never green in the fuzz tier (issue 19, point 6).

A cell whose examples were nearly all inconclusive (every row set aside, outside the error model,
unanswerable) judged nothing: it is ``vacuous`` -- undecided, never a pass -- with the number judged
and why the rest were set aside in its detail.  The minimum is ``engine.min_judged`` (a tenth of the
examples run, at least 1).
"""
from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path

import pytest
import torch

from tokenlaw.fuzz.rows import run_rows
from tokenlaw.fuzz.engine import MIN_JUDGED, PROFILES, min_judged, run_cell
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS, default_registry
from tokenlaw.properties.plan import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
REG = default_registry()
QUICK = PROFILES["quick"]


def _row(reg, op, contract):
    rows = plan(reg, operators=[op], contracts=[contract])
    run_rows(reg, rows, examples=QUICK, seed=0, replay_dir=None, progress=False)
    (row,) = rows
    return row


def test_the_minimum_is_a_tenth_of_each_profile_at_least_one():
    assert MIN_JUDGED == {"smoke": 1, "ci": 10, "thorough": 30, "deep": 200}
    assert (MIN_JUDGED["quick"], MIN_JUDGED["default"]) == (10, 30)          # the old names still answer
    assert [min_judged(n) for n in (0, 1, 9, 10, 11, 65)] == [1, 1, 1, 1, 2, 7]


def test_a_reference_that_is_never_finite_gives_a_vacuous_row_not_holds():
    canary = importlib.import_module("canaries.fuzz_vacuous_reference")
    row = _row(canary.registry(REG), "sm_fir", "spec_reference")
    assert row.outcome == V.Outcome.VACUOUS and row.outcome in V.UNDECIDED and not row.failing
    (cell,) = [c for c in row.cells if c.verdict is not None]
    v = cell.verdict
    assert v.status == V.Status.VACUOUS and V.outcome("claims", v) == V.Outcome.VACUOUS
    assert v.evidence.judged == 0 and v.examples >= min_judged(QUICK)
    # the detail says how many were judged, how many were needed, and why the others were set aside
    # a tenth of the examples run, banded_find's examples of the bands the search missed included (a cell
    # whose fill examples are all inconclusive must not hold on the budget's tenth alone: engine.run_cell)
    assert f"0 of {v.examples} examples judged" in v.detail and f"the {min_judged(v.examples)} needed" in v.detail
    assert "non-finite float64 value" in v.detail


def test_the_shipping_reference_is_judged_and_holds():
    row = _row(REG, "sm_fir", "spec_reference")
    assert row.outcome == V.Outcome.HOLDS
    (cell,) = [c for c in row.cells if c.verdict is not None]
    assert cell.verdict.evidence.judged >= min_judged(cell.verdict.examples)


def _contract(judge):
    """The 'finite' contract with another per-example judgement (a cheap stand-in for a real law)."""
    return dataclasses.replace(CONTRACTS["finite"], fn=judge)


@pytest.mark.parametrize("share, status", [(0, V.Status.VACUOUS), (2, V.Status.HOLDS), (1, V.Status.HOLDS)])
def test_a_cell_is_vacuous_exactly_when_too_few_examples_were_judged(share, status):
    """share 0: no example judged; 2: about half; 1: all."""
    def judge(case):
        skipped = share == 0 or case.seed % share != 0
        return V.holds(inconclusive=skipped)

    v = run_cell(REG["sm_fir"], _contract(judge), torch.float64, examples=40, seed=0, replay_dir=None)
    assert v.status == status, v.detail
    assert (v.evidence.judged >= min_judged(v.examples)) == (status == V.Status.HOLDS)


def test_a_cell_no_example_could_answer_is_not_runnable_not_holds():
    v = run_cell(REG["sm_fir"], _contract(lambda case: V.Verdict(V.Status.NOT_RUNNABLE, detail="cannot say")),
                 torch.float64, examples=20, seed=0, replay_dir=None)
    assert v.status == V.Status.NOT_RUNNABLE and v.detail.startswith("cannot say")


def test_a_violation_among_inconclusive_examples_is_still_found():
    def judge(case):
        if case.seed % 7 == 0:
            return V.violated(1.0, 0.0, "seeded")
        return V.holds(inconclusive=True)

    v = run_cell(REG["sm_fir"], _contract(judge), torch.float64, examples=40, seed=0, replay_dir=None)
    assert v.status == V.Status.VIOLATED
