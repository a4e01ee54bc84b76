"""One registry of formats and one writer (reports/formats.py): what each group writes, and what it refuses."""
from __future__ import annotations

import json

import pytest

from tokenlaw.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.reports import formats, proofs, verification, writers
from tokenlaw.reports.document import Document


def _fuzz():
    v = V.Verdict(V.Status.HOLDS, 0.1, 1.0, examples=3, seconds=0.25)
    return Document([Row("a", "simplex", "claims", "r", [Cell("a", "simplex", "eager", "float64", v)])],
                    dict(tier="fuzz", backend="eager", seed=0, profile="smoke", examples=3, seconds=1.5))


def _proof():
    v = V.Verdict(V.Status.PROVED, tier="symbolic", dtype="real", seconds=0.5)
    rows = [Row("a", "simplex", "claims", "r", [Cell("a", "simplex", "symbolic", "real", v)])]
    return proofs.document(rows, dict(tier="symbolic", backend="z3", solver="z3", timeout=5, seconds=0.5))


def test_every_group_names_registered_formats():
    for group in (formats.CONFORMANCE, formats.PROOFS, formats.VERIFICATION):
        assert set(group) <= set(formats.FORMATS)


def test_a_check_writes_its_group_without_timings_but_in_the_timings_files(tmp_path):
    doc = _fuzz()
    (tmp_path / "conformance.md").write_text("an earlier run\n")         # an earlier report, marked as stale
    assert writers.mark_interrupted(tmp_path, "conformance", "tokenlaw check").exists()
    paths = formats.write(doc, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"conformance{formats.FORMATS[n].suffix}" for n in formats.CONFORMANCE)   # the marker went
    assert set(paths) == set(formats.CONFORMANCE)
    written = json.loads(paths["json"].read_text())
    assert "seconds" not in written["meta"] and "seconds" not in written["rows"][0]["cells"][0]["verdict"]
    assert json.loads(paths["timings"].read_text())["seconds"] == 1.5


def test_the_proofs_report_keeps_its_seconds_and_the_combined_view_none(tmp_path):
    fz, pr = _fuzz(), _proof()
    paths = formats.write(pr, tmp_path, formats.PROOFS, stem="proofs")
    assert sorted(p.name for p in paths.values()) == ["proofs.json", "proofs.md"]
    assert json.loads(paths["timed-json"].read_text())["rows"][0]["cells"][0]["verdict"]["seconds"] == 0.5
    ver = verification.combine([fz, pr])
    paths = formats.write(ver, tmp_path, formats.VERIFICATION, stem="verification")
    text = paths["verification-json"].read_text()
    assert '"seconds"' not in text and json.loads(text)["summary"]["result"] == "PASS"


def test_a_json_dict_or_an_unknown_format_is_refused_naming_the_argument():
    doc = _fuzz()
    with pytest.raises(InvalidArgument, match="doc: expected a Document"):
        formats.render(doc.to_json(), "md")
    with pytest.raises(InvalidArgument, match="format: expected one of"):
        formats.render(doc, "pdf")
