"""The fuzz tier's canaries (tests/canaries/fuzz_*.py): no deliberately wrong operator gets a green row.

Each canary builds a fresh registry (the default one is never mutated) and
names the contracts through which the fuzz tier must see it.  The rows run
with the CLI's default profile; every one must be an UNEXPECTED violation
with a shrunk counterexample (or, for a canary that declares ``OUTCOME``,
that undecided outcome: e.g. ``vacuous`` where nothing could be judged),
never "holds".
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest
import torch

from tokenlaw.fuzz.campaign import run_rows
from tokenlaw.fuzz.engine import PROFILES
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
CANARIES = sorted(i.name for i in pkgutil.iter_modules([str(Path(__file__).resolve().parents[1] / "canaries")])
                  if i.name.startswith("fuzz_"))
DEFAULT_EXAMPLES = PROFILES["quick"]      # what `tokenlaw check` runs without --profile


def _canary(name):
    return importlib.import_module(f"canaries.{name}")


def test_every_fuzz_canary_states_its_reason_and_its_catching_contracts():
    assert len(CANARIES) >= 4
    for name in CANARIES:
        c = _canary(name)
        assert isinstance(c.REASON, str) and c.REASON.strip() and "\n" not in c.REASON, name
        assert c.CAUGHT_BY and c.OPERATOR


@pytest.mark.parametrize("name", CANARIES)
def test_fuzz_tier_gives_no_canary_a_green_row(name):
    c = _canary(name)
    base = default_registry()
    reg = c.registry(base)
    assert reg is not base and base[c.OPERATOR].fn is not reg[c.OPERATOR].fn if c.OPERATOR in base else True
    rows = plan(reg, operators=[c.OPERATOR], contracts=list(c.CAUGHT_BY))
    assert {r.contract for r in rows} == set(c.CAUGHT_BY), "every catching contract must be planned"
    run_rows(reg, rows, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None, progress=False)
    expected = getattr(c, "OUTCOME", V.BAD_UNEXPECTED)
    assert expected == V.BAD_UNEXPECTED or expected in V.UNDECIDED, expected
    for row in rows:
        assert row.outcome == expected, f"{name}: {row.id} is {row.outcome!r} ({c.REASON})"
        if expected == V.BAD_UNEXPECTED:
            bad = [cell.verdict for cell in row.cells if cell.verdict is not None and cell.verdict.violated]
            assert bad and bad[0].counterexample, row.id
            if getattr(c, "NONDETERMINISTIC", False):      # the finding says what it is
                assert "nondeterministic" in bad[0].extra, bad[0].detail
    # the default registry is untouched
    assert default_registry() is base


def test_fp16_collapse_is_found_by_the_default_profile_and_shrunk():
    """The pre-fix OAttention formula: the search reaches the regime on its own and shrinks to it."""
    c = _canary("fuzz_fp16_collapse")
    reg = c.registry(default_registry())
    rows = plan(reg, operators=["oattention"], contracts=["differential"], dtypes=["float16"])
    run_rows(reg, rows, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None, progress=False)
    (row,) = rows
    assert row.outcome == V.BAD_UNEXPECTED
    v = row.cells[0].verdict
    ce = v.counterexample
    assert ce["n"] <= 2 and ce["eps_den"] is not None and ce["eps_den"] <= 1.5e-5, ce
    assert ce["score_offset"] < -11 or ce["scale"] > 1 or ce["bias_scale"] > 1, ce   # scores below -11
    assert v.extra["found_at"] <= DEFAULT_EXAMPLES      # found within the budget (v.examples adds the shrinking)


def test_the_fixed_operator_holds_where_the_canary_fails():
    """Same search, shipping formula: the fp16 differential row is green."""
    reg = default_registry()
    rows = plan(reg, operators=["oattention"], contracts=["differential"], dtypes=["float16"])
    run_rows(reg, rows, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None, progress=False)
    assert rows[0].outcome == V.OK_HOLDS, rows[0].cells[0].verdict.detail
    assert rows[0].cells[0].verdict.extra["regimes"]["scores_low"] > 0


def test_presence_cancellation_is_caught_through_near_null_rows_alone():
    """With tau held at its default draws (no wide tau), the cancelling presence is still caught, and
    its counterexample keeps a near-null row: the log-uniform |h|^2 draws reach it (issue 19, point 5)."""
    import dataclasses

    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.properties.catalogue import CONTRACTS
    from tokenlaw.properties.contract import FuzzOptions

    c = _canary("fuzz_presence_cancellation")
    reg = c.registry(default_registry())
    law = CONTRACTS["formula_equivalence"]
    narrow = dataclasses.replace(law, fuzz=FuzzOptions(**{**law.fuzz_bounds, "wide_params": False}))
    v = run_cell(reg["oattention"], narrow, torch.float64, examples=DEFAULT_EXAMPLES, seed=0, replay_dir=None)
    assert v.violated and v.extra["found_at"] <= DEFAULT_EXAMPLES, v.detail
    ce = v.counterexample
    # |h|^2 far below tau (drawn in 0.1..2): the quotient tau / (tau + |h|^2) rounds and presence loses its bits
    assert ce["near_null"] and 0 < ce["tiny"] ** 2 <= 2.0 ** -20, ce
    # control: the shipping presence holds the same narrowed search
    ok = run_cell(default_registry()["oattention"], narrow, torch.float64, examples=DEFAULT_EXAMPLES, seed=0,
                  replay_dir=None)
    assert not ok.violated, ok.detail
