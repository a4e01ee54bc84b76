"""Counterexamples shrink to the smallest shape and plainest values that still violate (issue 47, point 3).

``fuzz/shrink.py`` descends over n, batch, heads, d and then the drawn values after Hypothesis' shrinker, which
stops where the strategy's draws stop (a length-band fill inside its band, a stored example as stored).
"""
from __future__ import annotations

import dataclasses
import importlib
import statistics
import sys
from pathlib import Path

import pytest
import torch

from tokenlaw.fuzz import shrink
from tokenlaw.fuzz.rows import run_rows
from tokenlaw.fuzz.engine import PROFILES, run_cell
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.evidence import Raised
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.plan import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
LOOK_AHEAD = importlib.import_module("canaries.fuzz_look_ahead_one")


@pytest.fixture(scope="module")
def look_ahead():
    reg = LOOK_AHEAD.registry(default_registry())
    return reg[LOOK_AHEAD.OPERATOR], reg.contracts["causality"]


def test_planted_look_ahead_shrinks_to_two_tokens(look_ahead):
    op, causality = look_ahead
    v = run_cell(op, causality, torch.float32, examples=PROFILES["quick"], seed=0, replay_dir=None)
    assert v.status == V.Status.VIOLATED
    assert v.counterexample["n"] == LOOK_AHEAD.MINIMAL_N == 2, v.counterexample
    record = v.evidence.shrink
    assert record["final"]["n"] == 2 and record["final"]["batch"] == 1, record
    assert record["first"]["n"] >= record["final"]["n"]


def test_descent_from_a_large_example_reaches_the_smallest_shape(look_ahead):
    """What a band fill (n in 33..64) or a stored example hands over: the descent takes it to n = 2."""
    op, causality = look_ahead
    big = Case(op, torch.float64, seed=5, batch=2, n=40, d=16, heads=4, null=(3, 30), scale=4.0, pos=17)
    first = causality.judge(big)
    assert first.status == V.Status.VIOLATED
    small, spent = shrink.descend(big, causality, first, bounds=causality.fuzz_bounds)
    assert shrink.shape(small) == {"n": 2, "d": 1, "batch": 1, "heads": 1}, shrink.shape(small)
    assert small.null == () and small.scale == 1.0 and 0 < spent <= shrink.BUDGET
    assert causality.judge(small).status == V.Status.VIOLATED        # the shrunk example is a counterexample


@dataclasses.dataclass
class _Law:
    """A stand-in contract: the operator raises below d = 4, the law is violated from n = 3 on."""

    calls: int = 0

    def judge(self, case):
        self.calls += 1
        if case.d < 4:
            return V.Verdict(V.Status.RAISED, detail="operator raised InvalidArgument: d",
                             raised=Raised("InvalidArgument", "d", "op.py:1"))
        return V.violated(1.0, 0.0, "bad") if case.n >= 3 else V.holds()


def test_descent_never_trades_a_violation_for_a_raise(look_ahead):
    op, _ = look_ahead
    law = _Law()
    case = Case(op, torch.float64, n=9, d=8, batch=2)
    small, spent = shrink.descend(case, law, law.judge(case))
    assert shrink.shape(small)["n"] == 3 and small.d == 4 and small.batch == 1, shrink.shape(small)
    assert spent == law.calls - 1


FUZZ_CANARIES = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "canaries").glob("fuzz_*.py"))


@pytest.mark.slow
def test_shape_before_and_after_shrinking_on_every_fuzz_canary(capsys):
    """The median shape of each canary's first violating draw and of its reported counterexample (printed;
    docs/fuzz.md records it).  No axis ever grows."""
    rows_seen = []
    for name in FUZZ_CANARIES:
        c = importlib.import_module(f"canaries.{name}")
        reg = c.registry(default_registry())
        rows = plan(reg, operators=[c.OPERATOR], contracts=list(c.CAUGHT_BY))
        run_rows(reg, rows, examples=PROFILES["quick"], seed=0, replay_dir=None, progress=False)
        for row in rows:
            for cell in row.cells:
                record = cell.verdict.evidence.shrink if cell.verdict and cell.verdict.evidence else None
                if record:
                    rows_seen.append((f"{row.id}-{cell.dtype}", record))
    assert rows_seen
    for cell, record in rows_seen:
        for axis in ("n", "d", "batch"):
            assert record["final"][axis] <= record["first"][axis], (cell, record)
    with capsys.disabled():
        for axis in ("n", "d", "batch"):
            before = statistics.median(r["first"][axis] for _, r in rows_seen)
            after = statistics.median(r["final"][axis] for _, r in rows_seen)
            print(f"\nshrink over {len(rows_seen)} violating canary cells: median {axis} {before} -> {after}")
        for cell, r in rows_seen:
            print(f"  {cell}: n {r['first']['n']} -> {r['final']['n']}, d {r['first']['d']} -> {r['final']['d']}, "
                  f"batch {r['first']['batch']} -> {r['final']['batch']}")
