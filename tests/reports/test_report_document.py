"""The report model: a written report reads back into a Document and writes out identical; outcomes come from
the verdicts (computed once, in Document.to_json), never from what a file claims."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import runs
from tokenlaw.reports import document, formats, proofs
from tokenlaw.reports.document import Document

BASELINE = Path(__file__).resolve().parents[2] / "reports" / "baseline.json"


def test_committed_baseline_round_trips_byte_for_byte():
    text = BASELINE.read_text()
    doc = Document.from_json(json.loads(text))
    assert len(doc.runs) >= 1 and doc.backends is not None          # a merged document keeps its runs
    assert json.dumps(doc.to_json(), indent=1) + "\n" == text


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("doc")
    settings = runs.CheckSettings(operators=["oattention", "sdpa"], contracts=["null_receiver", "closure"],
                                  examples=3, out=str(out))
    return runs.check(settings), out


def test_real_report_round_trips_with_and_without_timings(small):
    doc, out = small
    timed = doc.to_json()
    assert any("seconds" in c["verdict"] for r in timed["rows"] for c in r["cells"] if c["verdict"])
    assert Document.from_json(timed).to_json() == timed
    paths = formats.write(doc, out)
    written = json.loads(paths["json"].read_text())
    again = Document.from_json(written)
    assert again.to_json() == written
    for fmt in ("json", "md", "xml", "html"):         # every rendering of the read-back document is the file
        assert formats.render(again, fmt) == paths[fmt].read_text()


def test_proofs_report_round_trips():
    doc = runs.prove(runs.ProveSettings(operators=["oattention"], contracts=["null_receiver"], timeout=5))
    data = doc.to_json()
    assert data["note"] == proofs.HEADER and data["rows"][0]["cells"][0]["backend"] == "symbolic"
    back = Document.from_json(json.loads(json.dumps(data)))
    assert back.rows[0].outcome == doc.rows[0].outcome       # Row.outcome, one rule for both tiers
    assert back.to_json() == data
    assert proofs.to_markdown(back) == proofs.to_markdown(doc)


def test_a_forged_outcome_is_not_believed(small):
    doc, _ = small
    data = doc.stable_json()
    row = next(r for r in data["rows"] if r["declared"] == "claims" and r["cells"])
    cell = row["cells"][0]
    cell["verdict"].update(status="violated", discrepancy=1.0, bound=0.0)   # the evidence says violated...
    assert cell["outcome"] == row["outcome"] == "holds"                      # ...the file still says holds
    back = Document.from_json(data).to_json()
    got = next(r for r in back["rows"] if r["id"] == row["id"])
    assert got["outcome"] == got["cells"][0]["outcome"] == "UNEXPECTED violation"
    assert back["summary"]["result"] == "FAIL" and row["id"] in back["summary"]["failing"]
    assert 'failures="1"' in formats.render(Document.from_json(data), "xml")


def test_merge_runs_keeps_each_run_and_refuses_a_row_twice(small):
    doc, _ = small
    merged = document.merge_runs([doc])
    assert merged.runs == [doc.meta.run] and merged.row_backends() == ["eager"] * len(doc.rows)
    back = Document.from_json(json.loads(json.dumps(merged.to_json())))
    assert back.to_json() == merged.to_json()
    with pytest.raises(InvalidArgument, match="more than one report"):
        document.merge_runs([doc, doc])


def test_load_refuses_a_wrongly_shaped_report(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"meta": {}, "rows": [{"id": "a-b", "operator": "a", "contract": "b", "cells": {}}]}))
    with pytest.raises(InvalidArgument, match=r"rows\[0\]\.cells should be a list"):
        document.load(bad, "--current")
