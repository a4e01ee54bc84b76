"""The normaliser law table (reports/lawtable.py): rows by trait, each cell the documents' own per-tier verdict.

Hand-built documents with known verdicts for every state a cell can be in, then one real (tiny) check of a
throwaway normaliser declared in this test's own module, whose row appears because of its trait alone.
"""
from __future__ import annotations

import json

import pytest

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.reports import html as H
from tokenlaw.reports import lawtable as L
from tokenlaw.reports import formats, proofs
from tokenlaw.reports.document import Document
from tokenlaw.reports.meta import Meta

TRAITS = {"soft": ["masked", "score_normaliser", "token_mixing"],
          "gated": ["masked", "presence", "token_mixing"],          # OAttention-like: no W(S), still a row
          "host": ["host", "masked", "token_mixing"],               # a composition of blocks: not a row
          "local": ["token_local"]}


def fuzz_doc(rows, traits=TRAITS, scope=None):
    """rows: (operator, contract, declared, status[, counterexample]) on eager, two dtypes alike."""
    out = []
    for op, contract, declared, status, *ce in rows:
        v = V.Verdict(status, 1.0, 0.5, detail=f"{status} detail", counterexample=(ce[0] if ce else None),
                      replay=(f"{op}-{contract}-float64-abc" if ce else None))
        out.append(Row(op, contract, declared, "reason", [Cell(op, contract, "eager", dt, v)
                                                          for dt in ("float64", "float32")]))
    meta = dict(tier="fuzz", backend="eager", seed=0, profile="smoke", examples=3)
    if traits is not None:
        meta["traits"] = traits
    if scope is not None:
        meta["scope"] = scope
    return Document(out, Meta.from_json(meta))


def proof_doc(rows, traits=TRAITS):
    out = [Row(op, contract, declared, "reason",
                    [Cell(op, contract, "symbolic", "real", V.Verdict(status, tier="symbolic", detail=f"{status} why",
                                                                     **dict(extra)))])
           for op, contract, declared, status, *extra in rows]
    return proofs.document(out, Meta.from_json(dict(tier="symbolic", backend="z3", solver="z3", timeout=5, traits=traits)))


def col(key):
    return next(c for c in L.COLUMNS if c.key == key)


def test_rows_are_picked_by_trait_in_document_order():
    doc = fuzz_doc([(op, "permutation_equivariance", "claims", V.Status.HOLDS) for op in ("local", "host", "gated", "soft")])
    assert L.members([doc]) == ["gated", "soft"]
    assert L.is_member({"score_normaliser"}) and not L.is_member({"masked", "token_mixing", "host"})


def test_without_recorded_traits_the_score_normalisers_are_the_rows():
    """An older report (no meta.traits): the operators declaring a contract that requires score_normaliser."""
    doc = fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS), ("gated", "mask_respect", "claims", V.Status.HOLDS)],
                   traits=None)
    assert L.members([doc]) == ["soft"]


def test_two_tiers_show_both_symbolic_first():
    fz = fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS), ("soft", "gradcheck", "claims", V.Status.HOLDS)])
    pr = proof_doc([("soft", "simplex", "claims", V.Status.PROVED), ("soft", "gradcheck", "claims", V.Status.NOT_RUNNABLE)])
    t = L.build([fz, pr])
    cell = t.cell("soft", col("simplex"))
    assert [m.tier for m in cell.marks] == ["symbolic", "fuzz"]
    assert L._md_cell(cell) == "proved / holds" and L._readme_cell(cell) == "∎/✓"
    assert t.tiers == ("symbolic", "fuzz")


def test_a_tier_with_no_form_adds_nothing_where_another_judged_but_is_shown_alone():
    fz = fuzz_doc([("soft", "null_gradient", "claims", V.Status.HOLDS)])
    pr = proof_doc([("soft", "null_gradient", "claims", V.Status.NOT_RUNNABLE), ("soft", "causality", "claims", V.Status.NOT_RUNNABLE)])
    t = L.build([fz, pr])
    assert L._md_cell(t.cell("soft", col("null_grad"))) == "holds"
    assert L._md_cell(t.cell("soft", col("causal"))) == "not runnable"          # nothing judged it: said so


def test_undecided_tiers_are_shown_never_folded_into_green():
    fz = fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS), ("soft", "sub_simplex", "claims", V.Status.HOLDS)])
    pr = proof_doc([("soft", "simplex", "claims", V.Status.UNKNOWN), ("soft", "sub_simplex", "claims", V.Status.VACUOUS)])
    t = L.build([fz, pr])
    assert L._md_cell(t.cell("soft", col("simplex"))) == "unknown / holds"
    assert L._readme_cell(t.cell("soft", col("sub_simplex"))) == "?/✓"


def test_expected_violation_links_to_its_counterexample_with_the_replay_command():
    ce = {"n": 2, "batch": 1, "d": 4, "seed": 7}
    fz = fuzz_doc([("soft", "null_source_insertion", "violates", V.Status.VIOLATED, ce)])
    md = "\n".join(L.markdown(L.build([fz])))
    anchor = "lt-fuzz-soft-null_source_insertion"
    assert f"[violated (expected)](#{anchor})" in md
    entry = next(line for line in md.splitlines() if f'id="{anchor}"' in line)
    assert "n=2, batch=1, d=4, seed=7" in entry and "tokenlaw replay soft-null_source_insertion-float64-abc" in entry


def test_a_failing_row_reads_failing_everywhere():
    fz = fuzz_doc([("soft", "simplex", "claims", V.Status.VIOLATED, {"n": 1})])
    t = L.build([fz])
    cell = t.cell("soft", col("simplex"))
    assert L._md_cell(cell).startswith("[**UNEXPECTED**](#") and L._readme_cell(cell) == "FAIL"
    assert 'class="bad"' in L.html(t)


def test_a_refutation_that_did_not_replay_is_failing_though_its_outcome_reads_unknown():
    pr = proof_doc([("soft", "simplex", "claims", V.Status.UNKNOWN, ("mismatch", True))])
    cell = L.build([pr]).cell("soft", col("simplex"))
    assert cell.marks[0].outcome == V.Outcome.UNKNOWN and L._readme_cell(cell) == "FAIL"
    assert "MISMATCH" in L._md_cell(cell)


def test_not_declared_no_contract_and_not_in_this_run_are_told_apart():
    fz = fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS)], scope={"contracts": ["simplex"]})
    t = L.build([fz])
    assert t.cell("soft", col("exact_zeros")).state == L.NO_CONTRACT
    assert t.cell("soft", col("shift")).state == L.NOT_IN_RUN          # --contract simplex: never judged
    whole = L.build([fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS)])])
    assert whole.cell("soft", col("shift")).state == L.NOT_DECLARED
    legend = "\n".join(L.legend(t))
    assert "**exact zeros**: " in legend and "no contract yet" in legend


def test_one_report_per_tier():
    fz = fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS)])
    with pytest.raises(InvalidArgument, match="more than one fuzz report"):
        L.build([fz, fz])


def test_the_section_is_in_the_markdown_and_html_reports_and_verify_adds_the_proofs():
    fz = fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS), ("local", "gradcheck", "claims", V.Status.HOLDS)])
    pr = proof_doc([("soft", "simplex", "claims", V.Status.PROVED)])
    md = formats.render(fz, "md")
    assert "## Normaliser law table" in md and "| `soft` | holds |" in md and "`local`" not in md.split(
        "## Normaliser law table")[1].split("## Rows")[0]
    assert "| `soft` | proved / holds |" in formats.render(fz, "md", also=[pr])
    page = formats.render(fz, "html", also=[pr])
    assert '<table id="lawtable">' in page and "proved / holds" in page
    only_local = fuzz_doc([("local", "gradcheck", "claims", V.Status.HOLDS)])
    assert "law table" not in formats.render(only_local, "md").lower()
    assert H.html(only_local).count("lawtable") == 0


def test_readme_block_and_markers():
    t = L.build([fuzz_doc([("soft", "simplex", "claims", V.Status.HOLDS)])])
    block = L.readme(t, ["r.json"])
    page = f"intro\n{L.BEGIN}\nold\n{L.END}\nrest\n"
    new = L.splice(page, block)
    assert L.generated(new) == block and new.endswith(f"{L.END}\nrest\n")
    assert block.splitlines()[2].startswith("| `soft` | ✓ | · | · | – |")
    with pytest.raises(InvalidArgument, match="--readme: expected one"):
        L.splice("no markers here", block)


def test_a_throwaway_normaliser_gets_its_row_from_a_real_run(tmp_path):
    """A normaliser declared in this test's own module: a real check records its traits, the table lists it."""
    from tokenlaw.orchestration import runs
    module = tmp_path / "lt_throwaway.py"
    module.write_text(THROWAWAY)
    settings = runs.CheckSettings(operators=["lt_softmax"], contracts=["simplex"], dtypes=["float64"], examples=2,
                                  workers=1, out=str(tmp_path / "r"), operator_modules=[str(module)])
    doc = runs.check(settings).to_json()
    assert doc["meta"]["traits"] == {"lt_softmax": ["score_normaliser", "token_mixing"]}
    t = L.build([Document.from_json(json.loads(json.dumps(doc)))])
    assert t.operators == ("lt_softmax",)
    assert L._md_cell(t.cell("lt_softmax", col("simplex"))) == "holds"
    assert t.cell("lt_softmax", col("shift")).state == L.NOT_IN_RUN


THROWAWAY = '''
import torch
from tokenlaw.operators import projections
from tokenlaw.operators.registry import Domain, declare


def _weights(xp, s, mask=None, **params):
    e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    return xp.div(e, xp.sum(e, axis=-1, keepdims=True))


@declare(name="lt_softmax", domain=Domain(params=projections.attention_params), weights=_weights,
         traits={"token_mixing", "score_normaliser"}, claims={"simplex": "softmax rows sum to one"})
def lt_softmax(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    q, k, v = projections.project_qkv(xp, x, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, heads=heads)
    return projections.output(xp, xp.matmul(_weights(xp, projections.scores(xp, q, k)), v), wo)
'''


def test_a_run_report_shows_the_law_table_only_where_it_says_something(tmp_path, capsys):
    """Issue 47: a 13-column law table, nearly every cell "not declared", was appended for one operator that
    is no score normaliser.  A run's report keeps only the columns some row declares, and no table for a
    lone non-normaliser (it would repeat that operator's matrix rows); ``report lawtable`` keeps them all."""
    from tokenlaw.app import cli

    common = ["--contract", "permutation_equivariance", "--dtype", "float64", "--examples", "3", "--workers", "1",
              "--database", "none"]
    lone = tmp_path / "lone"
    assert cli.main(["check", "--operator", "oattention", *common, "--out", str(lone)]) == 0
    assert "law table" not in (lone / "conformance.md").read_text().lower()
    assert 'id="lawtable"' not in (lone / "conformance.html").read_text()
    # the whole table is still there on request
    capsys.readouterr()
    assert cli.main(["report", "lawtable", str(lone / "conformance.json")]) == 0
    assert "| `oattention` |" in capsys.readouterr().out

    two = tmp_path / "two"
    assert cli.main(["check", "--operator", "sdpa", "--operator", "sparsemax", *common, "--out", str(two)]) == 0
    md = (two / "conformance.md").read_text()
    section = md.split("## Normaliser law table", 1)[1]
    header = next(line for line in section.splitlines() if line.startswith("| operator | "))
    assert header == "| operator | permutation equivariance |", header     # the one column this run declares
    assert "| `sdpa` |" in section and "| `sparsemax` |" in section
    assert "- **permutation equivariance**" in section and "- **simplex**" not in section     # the legend follows
