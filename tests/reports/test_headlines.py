"""Honest headlines (issue 19 point 7): a run says how much of what it claims it established, and never
reads PASS over an undecided claimed row, or over a run that established nothing.

The counts are checked on rows with a known mix of verdicts (one of every symbolic status), and end to
end on a tiny user module (tests/fixtures/headline_ops.py) whose rows the tiers really judge.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenlaw.app import cli
from tokenlaw.app.exits import EXIT_FAIL, EXIT_OK, EXIT_UNDECIDED
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.orchestration import runs
from tokenlaw.reports import formats, proofs
from tokenlaw.reports.document import Document, Result, standing
from tokenlaw.reports.meta import Meta

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def proof_row(op, contract, status, declared="claims", detail="", **fields):
    v = V.Verdict(status, detail=detail or status, tier="symbolic", **fields)
    return Row(op, contract, declared, "reason", [Cell(op, contract, "symbolic", "real", v)])


NO_GRAD = "no symbolic form: a float64 finite-difference check: no real-arithmetic statement"
MIX = [proof_row("a", "zero_absorption", V.Status.PROVED), proof_row("b", "zero_absorption", V.Status.PROVED),
       proof_row("c", "zero_absorption", V.Status.SAMPLED),
       proof_row("d", "null_receiver", V.Status.UNKNOWN), proof_row("e", "mask_respect", V.Status.VACUOUS),
       proof_row("f", "null_receiver", V.Status.TRACE_DIFFERS),
       proof_row("a", "gradcheck", V.Status.NOT_RUNNABLE, detail=NO_GRAD),
       proof_row("b", "gradcheck", V.Status.NOT_RUNNABLE, detail=NO_GRAD),
       proof_row("a", "finite", V.Status.NOT_RUNNABLE, detail="no symbolic law for finite"),
       proof_row("g", "zero_absorption", V.Status.NOT_TRACEABLE),
       proof_row("h", "zero_absorption", V.Status.REFUTED),
       proof_row("s", "permutation_equivariance", V.Status.REFUTED, declared="violates"),
       proof_row("t", "permutation_equivariance", V.Status.UNKNOWN, declared="violates")]


def stand(rows):
    return proofs.standing(proofs.document(rows, Meta.from_json(dict(tier="symbolic"))))


def test_prove_headline_counts_a_known_mix():
    st = stand(MIX)
    assert (st.proved, st.claimed, st.sampled) == (2, 11, 1)
    assert st.undecided == {"d-null_receiver": V.Outcome.UNKNOWN, "e-mask_respect": V.Outcome.VACUOUS,
                               "f-null_receiver": V.Outcome.TRACE_DIFFERS}
    assert st.no_symbolic_form == {"gradcheck": {NO_GRAD: ["a-gradcheck", "b-gradcheck"]},
                                      "finite": {"no symbolic law for finite": ["a-finite"]}}
    assert st.not_traceable == ["g-zero_absorption"] and st.failing == ["h-zero_absorption"]
    assert (st.refuted, st.expected) == (1, 2) and st.result == "FAIL"
    text = proofs.headline(st)
    assert text.startswith("proved 2 of 11 claimed rows (18%); ")
    for part in ("1 hold for sampled weights only", "3 undecided", "3 with no symbolic form",
                 "1 not symbolically traceable", "1 failing", "1 of 2 expected violations refuted"):
        assert part in text, (part, text)


@pytest.mark.parametrize("drop,result", [
    ({"h-zero_absorption"}, "UNDECIDED"),                                     # undecided claimed rows left
    ({"h-zero_absorption", "d-null_receiver"}, "UNDECIDED"),                  # one undecided is enough
    ({"h-zero_absorption", "d-null_receiver", "e-mask_respect"}, "UNDECIDED"),
    ({"h-zero_absorption", "d-null_receiver", "e-mask_respect", "f-null_receiver"}, "PASS"),
    ({"h-zero_absorption", "d-null_receiver", "e-mask_respect", "f-null_receiver",
      "a-zero_absorption", "b-zero_absorption"}, "UNDECIDED"),                # nothing proved (sampled only)
], ids=["unknown+vacuous+trace", "vacuous+trace", "trace-differs", "pass", "nothing-proved"])
def test_result_of_each_case(drop, result):
    rows = [r for r in MIX if r.id not in drop]
    doc = proofs.document(rows, Meta.from_json(dict(tier="symbolic", solver="z3", timeout=5, seconds=0.0)))
    st = proofs.standing(doc)
    assert st.result == result
    md = proofs.to_markdown(doc)
    assert md.splitlines()[2].startswith(f"**{result}** - proved {st.proved} of {st.claimed} claimed rows")
    if result == "UNDECIDED" and st.proved == 0:
        assert "nothing was proved" in md.splitlines()[2]
    assert "`gradcheck` (2 rows) - " + NO_GRAD in md
    assert ("**PASS**" in md) == (result == "PASS")


def test_a_refutation_that_did_not_replay_fails_even_though_its_outcome_reads_unknown():
    rows = [proof_row("a", "zero_absorption", V.Status.PROVED), proof_row("m", "null_receiver", V.Status.UNKNOWN, mismatch=True)]
    st = stand(rows)
    assert st.result == "FAIL" and st.failing == ["m-null_receiver"] and st.undecided == {}


def test_standing_is_one_rule_for_both_tiers():
    # The fuzz tier: an undecided claimed row is never PASS; a run whose claimed rows none holds is undecided.
    fuzz = [("r1", "claims", V.Outcome.HOLDS, False), ("r2", "claims", V.Outcome.VACUOUS, False)]
    assert standing(fuzz, proof=False).result is Result.UNDECIDED
    assert standing(fuzz[:1], proof=False).result is Result.PASS
    assert standing(fuzz[:1], proof=True).result is Result.UNDECIDED          # holds is not proved
    assert standing([("r", "claims", V.Outcome.NOT_RUNNABLE, False)], proof=False).result is Result.UNDECIDED
    assert standing([("r", "violates", V.Outcome.EXPECTED, False)], proof=False).result is Result.PASS   # nothing claimed
    assert standing(fuzz + [("r3", "violates", V.Outcome.NOT_REPRODUCED, True)], proof=False).result is Result.FAIL
    by_design = [("r1", "claims", V.Outcome.HOLDS, False), ("r4", "claims", V.Outcome.NOT_APPLICABLE_BY_DESIGN, False)]
    assert standing(by_design, proof=False).claimed["rows"] == 1


def conformance_row(op, *statuses):
    return Row(op, "null_receiver", "claims", "reason",
               [Cell(op, "null_receiver", "eager", dt, V.Verdict(s)) for s, dt in zip(statuses, ("float64", "float32"))])


def test_conformance_report_is_not_pass_over_a_vacuous_cell():
    doc = Document([conformance_row("a", V.Status.HOLDS, V.Status.HOLDS), conformance_row("b", V.Status.HOLDS, V.Status.VACUOUS)],
                   Meta.from_json(dict(tier="fuzz", backend="eager")))
    summ = doc.to_json()["summary"]
    assert summ["result"] == "UNDECIDED" and summ["undecided"] == ["b-null_receiver"]
    assert summ["claimed"] == {"rows": 2, "proved": 0, "established": 1, "undecided": 1, "not_run": 0, "failing": 0}
    md = formats.render(doc, "md")
    assert md.splitlines()[2].startswith("**UNDECIDED** - ") and "1 of 2 claimed rows established" in md
    assert "## Undecided claimed rows" in md and "`b-null_receiver`: vacuous" in md
    assert 'class="verdict UNDECIDED"' in formats.render(doc, "html")


@pytest.fixture
def user_module(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.chdir(tmp_path)
    return ["--operators", "headline_ops"]


def _prove(ops, capsys, *operators):
    capsys.readouterr()
    rc = cli.main([*ops, "prove", *[a for o in operators for a in ("--operator", o)], "--out", "p", "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_prove_exit_codes_on_a_user_module(user_module, capsys):
    rc, out = _prove(user_module, capsys, "hl_double")
    assert rc == EXIT_OK and out["result"] == "PASS"
    assert out["headline"].startswith("proved 1 of 4 claimed rows (25%); 3 with no symbolic form")
    assert sorted(out["no_symbolic_form"]) == ["differential", "finite", "spec_reference"]
    md = Path("p/proofs.md").read_text()
    assert "**PASS** - proved 1 of 4 claimed rows" in md
    assert "## Claimed rows with no symbolic form, by contract" in md and "`hl_double-finite`" in md

    rc, out = _prove(user_module, capsys, "hl_double", "hl_shift")          # refuted: a finding
    assert rc == EXIT_FAIL and out["result"] == "FAIL"
    assert [f["id"] for f in out["failing"]] == ["hl_shift-zero_absorption"]
    assert out["headline"].startswith("proved 1 of 8 claimed rows")

    rc, out = _prove(user_module, capsys, "hl_plain")                       # nothing proved: never PASS
    assert rc == EXIT_UNDECIDED and out["result"] == "UNDECIDED"
    assert out["headline"].startswith("proved 0 of 4 claimed rows (0%)") and "nothing was proved" in out["headline"]
    assert "**UNDECIDED** - proved 0 of 4" in Path("p/proofs.md").read_text()


def test_check_exit_code_follows_the_same_rule(user_module, capsys, monkeypatch):
    assert cli.main([*user_module, "check", "--operator", "hl_plain", "--examples", "3", "--out", "c", "--json"]) \
        == EXIT_OK                                                          # established by the fuzz tier
    out = json.loads(capsys.readouterr().out)
    assert out["result"] == "PASS" and out["claimed"]["established"] == out["claimed"]["rows"] - out["claimed"]["not_run"]
    # A claimed row the tier could not decide (a vacuous cell) is not a pass: the command says so.
    undecided = Document([conformance_row("a", V.Status.HOLDS, V.Status.HOLDS), conformance_row("b", V.Status.HOLDS, V.Status.VACUOUS)],
                         Meta.from_json(dict(tier="fuzz", backend="eager")))
    monkeypatch.setattr(runs, "check", lambda settings, **kw: undecided)
    assert cli.main(["check", "--out", "c2", "--json"]) == EXIT_UNDECIDED
    out = json.loads(capsys.readouterr().out)
    assert out["undecided"] == [{"id": "b-null_receiver", "outcome": V.Outcome.VACUOUS}] and out["failing"] == []
    assert cli.main(["check", "--out", "c2"]) == EXIT_UNDECIDED
    assert "UNDECIDED: 1 of 2 claimed rows established" in capsys.readouterr().out


def test_outcome_severity_is_one_explicit_order():
    """Outcome.worst picks by each member's declared severity; the gate compares by the same ranks."""
    assert all(isinstance(o.severity, int) for o in V.Outcome) and V.Outcome("holds") is V.Outcome.HOLDS
    assert V.Outcome.PROVED.severity < V.Outcome.HOLDS.severity < V.Outcome.UNKNOWN.severity \
        < V.Outcome.NOT_RUNNABLE.severity < V.Outcome.NOT_REPRODUCED.severity < V.Outcome.UNEXPECTED.severity
    assert V.Outcome.worst(V.Outcome.PROVED, "holds", V.Outcome.UNEXPECTED, V.Outcome.UNKNOWN) is V.Outcome.UNEXPECTED
    assert V.Outcome.worst(V.Outcome.HOLDS, V.Outcome.VACUOUS) is V.Outcome.VACUOUS
    assert V.Outcome.worst(V.Outcome.RAISED, V.Outcome.UNEXPECTED) is V.Outcome.RAISED           # equally bad: the first
    assert V.Outcome.PROVED.severity < V.Outcome.HOLDS.severity < V.Outcome.UNKNOWN.severity < V.Outcome.NOT_REPRODUCED.severity
    with pytest.raises(ValueError):
        V.Outcome.worst()


def test_document_standing_is_typed_and_agrees_with_the_summary():
    rows = [conformance_row("oattention", V.Status.HOLDS, V.Status.HOLDS), conformance_row("sdpa", V.Status.HOLDS, V.Status.VIOLATED)]
    for kept, want in ((rows[:1], Result.PASS), (rows, Result.FAIL)):
        doc = Document(kept, Meta.from_json({"tier": "fuzz"}))
        st = doc.standing()
        assert st.result is want and doc.to_json()["summary"]["result"] == want.value
        assert st.to_json() == {k: doc.to_json()["summary"][k] for k in ("result", "failing", "undecided", "claimed")}
    proved = proofs.document([proof_row("a", "zero_absorption", V.Status.PROVED),
                              proof_row("m", "null_receiver", V.Status.UNKNOWN, mismatch=True)], Meta.from_json(dict(tier="symbolic")))
    assert proved.standing().result is Result.FAIL and proved.standing().failing == ["m-null_receiver"]
