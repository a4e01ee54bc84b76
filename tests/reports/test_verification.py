"""The combined view (issue 19 point 7): per row what each tier established, green only if no tier refuted it.

Built from rows of known verdicts for every combination that matters, and end to end on a user module
(tests/fixtures/headline_ops.py) whose tiers really disagree: ``hl_drawn`` holds on every drawn tensor
and is refuted in the reals; ``hl_overflow`` is proved in the reals and violated in float64.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenlaw.app import cli
from tokenlaw.app.exits import EXIT_FAIL, EXIT_OK, EXIT_UNDECIDED, EXIT_USAGE
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.reports import proofs, verification
from tokenlaw.reports.document import Document
from tokenlaw.reports.meta import Meta

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fuzz_doc(*rows):
    """rows: (operator, declared, status) on the eager backend, two dtypes with the same status."""
    out = [Row(op, "zero_absorption", declared, "reason",
               [Cell(op, "zero_absorption", "eager", dt, V.Verdict(status)) for dt in ("float64", "float32")])
           for op, declared, status in rows]
    return Document(out, Meta.from_json(dict(tier="fuzz", backend="eager", seed=0)))


def proof_doc(*rows):
    out = [Row(op, "zero_absorption", declared, "reason",
                    [Cell(op, "zero_absorption", "symbolic", "real",
                          V.Verdict(status, tier="symbolic", detail=status, **dict(extra)))])
           for op, declared, status, *extra in rows]
    return proofs.document(out, Meta.from_json(dict(tier="symbolic", backend="z3", solver="z3", timeout=5)))


CASES = [  # (operator, declared, fuzz status, symbolic status, typed fields, combined colour, combined outcome)
    ("both_hold", "claims", V.Status.HOLDS, V.Status.PROVED, (), "green", V.Outcome.PROVED),
    ("no_form", "claims", V.Status.HOLDS, V.Status.NOT_RUNNABLE, (), "green", V.Outcome.HOLDS),
    ("fuzz_only_refutes", "claims", V.Status.VIOLATED, V.Status.PROVED, (), "red", V.Outcome.UNEXPECTED),
    ("prove_only_refutes", "claims", V.Status.HOLDS, V.Status.REFUTED, (), "red", V.Outcome.UNEXPECTED),
    ("unknown", "claims", V.Status.HOLDS, V.Status.UNKNOWN, (), "undecided", V.Outcome.UNKNOWN),
    ("trace", "claims", V.Status.HOLDS, V.Status.TRACE_DIFFERS, (), "undecided", V.Outcome.TRACE_DIFFERS),
    ("vacuous", "claims", V.Status.HOLDS, V.Status.VACUOUS, (), "undecided", V.Outcome.VACUOUS),
    ("mismatch", "claims", V.Status.HOLDS, V.Status.UNKNOWN, (("mismatch", True),), "red", V.Outcome.UNKNOWN),
    ("domain", "claims", V.Status.HOLDS, V.Status.DOMAIN_MISMATCH, (), "red", V.Outcome.DOMAIN_MISMATCH),
    ("sampled", "claims", V.Status.HOLDS, V.Status.SAMPLED, (), "green", V.Outcome.HOLDS),
    ("nothing_ran", "claims", V.Status.NOT_RUNNABLE, V.Status.NOT_RUNNABLE, (), "not run", V.Outcome.NOT_RUNNABLE),
    ("expected", "violates", V.Status.VIOLATED, V.Status.REFUTED, (), "green", V.Outcome.EXPECTED),
    ("proved_away", "violates", V.Status.VIOLATED, V.Status.PROVED, (), "red", V.Outcome.NOT_REPRODUCED),
    ("expected_unknown", "violates", V.Status.VIOLATED, V.Status.UNKNOWN, (), "green", V.Outcome.EXPECTED),
]


def combined(cases):
    fuzz = fuzz_doc(*[(op, d, f) for op, d, f, *_ in cases])
    sym = proof_doc(*[(op, d, s, *extra) for op, d, _, s, extra, *_ in cases])
    return verification.combine([fuzz, sym])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_combination_of_tier_outcomes(case):
    op, declared, fuzz, sym, extra, colour, outcome = case
    row = combined([case]).rows[0]
    assert (row.colour, row.outcome) == (colour, outcome)
    assert [t.tier for t in row.tiers] == ["fuzz", "symbolic"]
    assert row.failing == (colour == "red")


def test_the_view_shows_what_each_tier_established():
    ver = combined(CASES)
    view = ver.to_json()
    by = {r["id"]: r for r in view["rows"]}
    assert by["prove_only_refutes-zero_absorption"]["tiers"]["fuzz"]["says"] == "holds"
    assert by["prove_only_refutes-zero_absorption"]["tiers"]["symbolic"]["says"] == "REFUTED"
    assert by["fuzz_only_refutes-zero_absorption"]["tiers"]["fuzz"]["says"] == "VIOLATED"
    assert by["fuzz_only_refutes-zero_absorption"]["tiers"]["symbolic"]["says"] == "proved"
    assert by["no_form-zero_absorption"]["tiers"]["symbolic"]["says"] == "no symbolic form"
    assert by["trace-zero_absorption"]["tiers"]["symbolic"]["says"] == V.Outcome.TRACE_DIFFERS
    assert by["mismatch-zero_absorption"]["tiers"]["symbolic"]["says"].startswith("MISMATCH")
    assert view["summary"]["result"] == "FAIL"
    assert sorted(view["summary"]["failing"]) == sorted(f"{c[0]}-zero_absorption" for c in CASES if c[5] == "red")
    assert view["summary"]["undecided"] == ["unknown-zero_absorption", "trace-zero_absorption",
                                            "vacuous-zero_absorption"]
    md = verification.to_markdown(ver)
    assert md.splitlines()[2].startswith("**FAIL** - 11 claimed rows: 3 green, 3 undecided, 4 red, 1 not run")
    assert "| `prove_only_refutes-zero_absorption` | claims | **RED** | holds | REFUTED |" in md


@pytest.mark.parametrize("keep,result", [
    (("both_hold", "no_form", "expected"), "PASS"),
    (("both_hold", "trace"), "UNDECIDED"),
    (("both_hold", "unknown", "expected_unknown"), "UNDECIDED"),
    (("nothing_ran",), "UNDECIDED"),                       # claimed rows, none established
    (("both_hold", "unknown", "prove_only_refutes"), "FAIL"),
])
def test_the_result_of_the_combined_view(keep, result):
    view = combined([c for c in CASES if c[0] in keep]).to_json()
    assert view["summary"]["result"] == result


def test_tiers_that_disagree_on_a_declaration_or_repeat_are_refused():
    with pytest.raises(InvalidArgument, match="declared"):
        verification.combine([fuzz_doc(("a", "claims", V.Status.HOLDS)), proof_doc(("a", "violates", V.Status.REFUTED))])
    with pytest.raises(InvalidArgument, match="more than one fuzz report"):
        verification.combine([fuzz_doc(("a", "claims", V.Status.HOLDS)), fuzz_doc(("a", "claims", V.Status.HOLDS))])


@pytest.fixture
def user_module(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.chdir(tmp_path)
    return ["--operators", "headline_ops"]


def test_verify_on_a_user_module_whose_tiers_disagree(user_module, capsys):
    sel = ["--operator", "hl_double", "--operator", "hl_drawn", "--operator", "hl_overflow", "--contract",
           "zero_absorption"]
    rc = cli.main([*user_module, "verify", *sel, "--profile", "smoke", "--out", "v", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == EXIT_FAIL and out["result"] == "FAIL"
    view = json.loads(Path("v/verification.json").read_text())
    tiers = {r["id"]: (r["combined"], r["tiers"]["fuzz"]["outcome"], r["tiers"]["symbolic"]["outcome"])
             for r in view["rows"]}
    assert tiers["hl_double-zero_absorption"] == ("green", V.Outcome.HOLDS, V.Outcome.PROVED)
    # holds on every drawn weight (w > 0), refuted in the reals (w < 0): red
    assert tiers["hl_drawn-zero_absorption"] == ("red", V.Outcome.HOLDS, V.Outcome.UNEXPECTED)
    # 1e200 * 1e200 * 0: 0 in the reals, NaN in float64: red.  (A trace check that compares the traced
    # expression with eager float64 may call the symbolic side "trace differs"; never green either way.)
    combined_, fuzz, sym = tiers["hl_overflow-zero_absorption"]
    assert (combined_, fuzz) == ("red", V.Outcome.UNEXPECTED) and sym in (V.Outcome.PROVED, V.Outcome.TRACE_DIFFERS)
    assert [f["id"] for f in out["failing"]] == ["hl_drawn-zero_absorption", "hl_overflow-zero_absorption"]
    assert Path("v/conformance.json").exists() and Path("v/proofs.json").exists()
    assert "**RED** | holds | REFUTED |" in Path("v/verification.md").read_text()

    # report merge of the two tiers' reports is the same combined view, byte for byte
    capsys.readouterr()
    assert cli.main(["report", "merge", "v/conformance.json", "v/proofs.json", "--out", "m"]) == EXIT_FAIL
    assert Path("m/verification.json").read_text() == Path("v/verification.json").read_text()
    assert "FAIL: 3 claimed rows: 1 green, 0 undecided, 2 red" in capsys.readouterr().out


def test_verify_exit_zero_and_four(user_module, capsys):
    assert cli.main([*user_module, "verify", "--operator", "hl_double", "--contract", "zero_absorption",
                     "--profile", "smoke", "--out", "v"]) == EXIT_OK
    assert "PASS: 1 claimed row: 1 green" in capsys.readouterr().out
    # the symbolic tier undecided on a row the fuzz tier holds: the combined view is undecided
    fuzz = fuzz_doc(("a", "claims", V.Status.HOLDS))
    sym = proof_doc(("a", "claims", V.Status.TRACE_DIFFERS))
    Path("u").mkdir()
    Path("u/conformance.json").write_text(json.dumps(fuzz.to_json()))
    Path("u/proofs.json").write_text(json.dumps(sym.to_json()))
    assert cli.main(["report", "merge", "u/conformance.json", "u/proofs.json", "--out", "u", "--json"]) \
        == EXIT_UNDECIDED
    out = json.loads(capsys.readouterr().out)
    assert out["undecided"] == [{"id": "a-zero_absorption", "outcome": V.Outcome.TRACE_DIFFERS}]
    # bad arguments are refused before the fuzz run starts
    assert cli.main(["verify", "--timeout", "0", "--out", "v"]) == EXIT_USAGE
    assert "--timeout" in capsys.readouterr().err
