"""The campaign's budget rule and its Markdown report, on verdicts built by hand (no search runs here)."""
from __future__ import annotations

import json

from tokenlaw.orchestration.campaigns import FIRST_BUDGET, MAX_BUDGET, CellRecord
from tokenlaw.reports.campaign import CampaignReport, markdown
from tokenlaw.properties import verdict as V
from tokenlaw.properties.evidence import FuzzEvidence


def holds(ratio: float, regimes=None, examples=25) -> V.Verdict:
    return V.Verdict(V.Status.HOLDS, ratio, 1.0, "held", examples=examples,
                     evidence=FuzzEvidence(regimes=dict(regimes or {})))


def violated(replay: str, examples=7) -> V.Verdict:
    return V.Verdict(V.Status.VIOLATED, 3.0, 1.0, "output at null tokens", examples=examples,
                     counterexample="Case(n=2)", replay=replay,
                     evidence=FuzzEvidence(searched={"n": [1, 3]}, regimes={}, notes="searched n 1..3"))


def test_a_cell_whose_ratio_rises_doubles_its_budget_and_one_that_stalls_keeps_it():
    cell = CellRecord("op-law-float32", "claims")
    assert cell.budget == FIRST_BUDGET
    assert cell.learn(holds(0.5), 1) and cell.budget == 2 * FIRST_BUDGET          # rose from 0
    assert not cell.learn(holds(0.5), 2) and cell.budget == 2 * FIRST_BUDGET      # the same best: stalled
    assert not cell.learn(holds(0.1), 3) and cell.budget == 2 * FIRST_BUDGET      # lower: stalled
    assert cell.learn(holds(0.7), 4) and cell.budget == 4 * FIRST_BUDGET
    assert (cell.rounds, cell.examples, cell.best_ratio) == (4, 100, 0.7)


def test_a_new_regime_doubles_the_budget_and_a_regime_seen_before_does_not():
    cell = CellRecord("op-law-float16", "claims")
    cell.learn(holds(0.5, {"long_row": 0, "scores_low": 3}), 1)
    assert cell.budget == 2 * FIRST_BUDGET
    assert not cell.learn(holds(0.5, {"long_row": 0, "scores_low": 9}), 2)       # scores_low again, long_row not
    assert cell.learn(holds(0.5, {"long_row": 1, "scores_low": 0}), 3)            # long_row for the first time
    assert cell.budget == 4 * FIRST_BUDGET and cell.regimes == {"long_row": 1, "scores_low": 12}


def test_the_budget_stops_doubling_at_the_cap():
    cell = CellRecord("op-law-float64", "claims")
    for k in range(20):
        cell.learn(holds(float(k + 1)), k + 1)
    assert cell.budget == MAX_BUDGET


def test_a_violation_is_recorded_once_per_replay_id_and_does_not_raise_the_best_ratio():
    cell = CellRecord("sdpa-null_receiver-float32", "violates")
    assert not cell.learn(violated("sdpa-null_receiver-float32-aaaa"), 1)
    cell.learn(violated("sdpa-null_receiver-float32-aaaa"), 2)                    # found again: the same artifact
    cell.learn(violated("sdpa-null_receiver-float32-bbbb"), 3)
    assert [v["replay"] for v in cell.violations] == ["sdpa-null_receiver-float32-aaaa",
                                                      "sdpa-null_receiver-float32-bbbb"]
    assert [v["round"] for v in cell.violations] == [1, 3]
    assert cell.best_ratio == 0.0 and cell.budget == FIRST_BUDGET and cell.status == "violated"
    assert cell.violations[0]["detail"] == "output at null tokens"       # the detail, not the search's notes
    assert json.loads(json.dumps(cell.to_json()))["violations"][0]["counterexample"] == "Case(n=2)"


def _doc(cells, **meta) -> CampaignReport:
    base = dict(kind="campaign", minutes=0.5, seconds=31.2, rounds=3, interrupted=False, seed=4, backend="eager",
                database="redis://h:6379/0", mutant=None, replays="reports/replays",
                dask={"workers": {"tcp://10.0.0.1:4000": 5, "tcp://10.0.0.2:4001": 4}})
    base.update(meta)
    return CampaignReport.from_json({"meta": base, "cells": [c.to_json() for c in cells]})


def test_the_markdown_lists_every_cell_and_a_replay_command_per_violation():
    a, b = CellRecord("oattention-finite-float16", "claims"), CellRecord("sdpa-null_receiver-float32", "violates")
    a.learn(holds(0.25, {"long_row": 4}), 1)
    b.learn(violated("sdpa-null_receiver-float32-aaaa"), 1)
    text = markdown(_doc([a, b]))
    assert "3 rounds in 31 s (time box 0.5 min), seed 4, backend eager, database redis://h:6379/0." in text
    assert "tcp://10.0.0.1:4000 (5), tcp://10.0.0.2:4001 (4)" in text
    assert "| `oattention-finite-float16` | 1 | 25 | 0.25 | long_row 4 | - |" in text
    assert "| `sdpa-null_receiver-float32` | 1 | 7 | 0 | - | `sdpa-null_receiver-float32-aaaa` |" in text
    assert "    tokenlaw replay sdpa-null_receiver-float32-aaaa --replays reports/replays" in text
    assert text.count("tokenlaw replay") == 1


def test_the_markdown_says_interrupted_an_infinite_ratio_and_the_mutant():
    a = CellRecord("op-law-float16", "claims")
    a.learn(holds(float("inf")), 1)
    text = markdown(_doc([a], interrupted=True, mutant="oattn_running_max_two_tiles"))
    assert "interrupted" in text and "| inf |" in text
    assert "mutant oattn_running_max_two_tiles" in text
    assert "mutant" not in markdown(_doc([a]))
