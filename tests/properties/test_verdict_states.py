"""Typed states (issue 20, point 4): statuses and outcomes are str-valued enums, a Verdict is frozen, the
fields the tiers branch on are typed -- and the report JSON is what it was (docs/report-schema.md)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from tokenlaw.properties import verdict as V
from tokenlaw.properties.evidence import FuzzEvidence, ProofEvidence, Raised
from tokenlaw.reports.document import verdict_from_json


def test_members_are_their_strings_in_json_sets_and_text():
    assert json.dumps({"s": V.Status.NOT_APPLICABLE_BY_DESIGN}) == '{"s": "not_applicable"}'
    assert f"{V.Outcome.UNEXPECTED}" == "UNEXPECTED violation" and str(V.Status.HOLDS) == "holds"
    # outcomes read back from a report are plain strings: they must still be found in the enum's sets
    assert "UNEXPECTED violation" in V.FAILING and "unknown" in V.UNDECIDED and "not runnable here" in V.NOT_RUN
    assert {V.Status.HOLDS: 1}["holds"] == 1
    assert V.Verdict("holds").status is V.Status.HOLDS


def test_the_near_colliding_states_are_distinct_members():
    assert V.Status.NOT_APPLICABLE_BY_DESIGN != V.Outcome.NOT_APPLICABLE_BY_DESIGN != V.Outcome.UNDECLARED
    assert V.outcome(None, V.holds()) is V.Outcome.UNDECLARED
    by_design = V.Verdict(V.Status.NOT_APPLICABLE_BY_DESIGN, detail="the probe itself")
    assert V.outcome("claims", by_design) is V.Outcome.NOT_APPLICABLE_BY_DESIGN
    with pytest.raises(ValueError, match="status"):
        V.Verdict("not applicable")                  # an outcome's wording is no status


def test_a_verdict_is_frozen_and_changed_with_replace():
    v = V.holds(1.0, 2.0, "first")
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.detail = "changed"
    w = dataclasses.replace(v, detail="second")
    assert (v.detail, w.detail, w.ratio) == ("first", "second", 0.5)


def test_a_steering_key_in_extra_is_refused():
    for key in ("mismatch", "step", "inconclusive", "params", "witness", "raised", "regimes", "draws", "statement"):
        with pytest.raises(ValueError, match=key):
            V.Verdict(V.Status.UNKNOWN, extra={key: True})


def test_typed_fields_are_written_where_the_schema_always_had_them_and_read_back():
    v = V.Verdict(V.Status.UNKNOWN, detail="MISMATCH", tier="symbolic", evidence=ProofEvidence().add(solver="z3"),
                  mismatch=True, params="symbols")
    d = json.loads(json.dumps(v.to_json()))
    assert d["extra"] == {"solver": "z3", "params": "symbols", "mismatch": True}
    assert not {"mismatch", "step", "inconclusive", "params", "witness"} & set(d)      # schema unchanged
    back = verdict_from_json(d)
    assert back == v and back.mismatch and back.extra == {} and back.evidence.solver == "z3"
    # unset flags are not written at all (as before: the key was absent)
    assert "mismatch" not in V.holds().to_json()["extra"]


def test_a_report_written_before_the_typed_fields_reads_the_same():
    old = {"status": "refuted", "discrepancy": "inf", "bound": 0.0, "detail": "d", "counterexample": None,
           "examples": 0, "seconds": 0.1, "tier": "symbolic", "dtype": "real", "replay": None,
           "extra": {"step": True, "witness": "searched", "queries": 2}}
    v = verdict_from_json(old)
    assert v.status is V.Status.REFUTED and v.step and v.witness == "searched" and v.extra == {}
    assert v.evidence == ProofEvidence(queries=2, order=("queries",))
    assert v.to_json() == old


def test_fuzz_evidence_is_typed_in_and_written_at_the_edge():
    """The search's record is the verdict's evidence; the report writes it under the old extra keys and its
    notes after the detail, and reads both back (a bracket inside the law's own sentence stays there)."""
    e = FuzzEvidence(searched={"n": [1, 9]}, drawn={}, missed_bands=[], missed_lengths=[], accounting={},
                     trivial=0, unjudged=[], regimes={"long_row": 0}, unvisited=["long_row"], set_aside=0,
                     inconclusive=0, notes="searched n 1..9; NEVER visited: long_row", judged=3, found_at=2,
                     from_database=True, draws="abc", probes=2)
    v = V.violated(2.0, 1.0, "rows [0, 1] differ", extra={"ratio": 2.0}, evidence=e,
                   raised=Raised("ValueError", "bad", "op.py:3"))
    d = json.loads(json.dumps(v.to_json()))
    assert d["detail"] == ("rows [0, 1] differ [searched n 1..9; NEVER visited: long_row]"
                           " [replayed from the example database]")
    assert list(d["extra"])[:3] == ["ratio", "raised", "searched"] and d["extra"]["judged_examples"] == 3
    back = verdict_from_json(d)
    assert back == v and back.detail == "rows [0, 1] differ" and back.extra == {"ratio": 2.0}
    assert back.to_json() == v.to_json()
