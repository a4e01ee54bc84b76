"""The records the reports render besides a Document (a campaign's, the adversary's kill matrix, the fidelity
record) are typed at the JSON edge: read once by ``from_json``, written back unchanged, and the committed
records re-render to the committed files byte for byte."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tokenlaw.reports import fidelity, kill_matrix
from tokenlaw.reports.campaign import CampaignCell, CampaignReport, Finding

ROOT = Path(__file__).resolve().parents[2]
ADVERSARY = ROOT / "reports" / "adversary"
FIDELITY = ROOT / "reports" / "fidelity"


def test_the_committed_kill_matrix_reads_back_and_writes_the_same_bytes():
    raw = (ADVERSARY / "adversary.json").read_text()
    report = kill_matrix.KillMatrix.from_json(json.loads(raw))
    assert all(isinstance(m, kill_matrix.MutantRun) for m in report.mutants)
    assert all(isinstance(t, kill_matrix.Tally) for t in report.axes.values())
    assert json.dumps(report.to_json(), indent=1) + "\n" == raw
    assert kill_matrix.markdown(report) == (ADVERSARY / "adversary.md").read_text()


def test_a_kill_matrix_record_missing_optional_fields_writes_none_of_them():
    """An older report (no inert status, mutants without timings) reads back to what it was, adding nothing."""
    data = {"meta": {}, "figure": dict(killed=1, non_equivalent=1, equivalent=0, gaps=0, crashed=0),
            "axes": {"n": dict(total=1, killed=1, equivalent=0, gap=0, crashed=0)}, "families": {}, "operators": {},
            "baseline_failing": [], "not_implemented": {}, "mutants": [dict(id="a:n:scale", status="killed", reason="")]}
    assert kill_matrix.KillMatrix.from_json(data).to_json() == data
    assert math.isnan(kill_matrix.unit_rate(kill_matrix.KillMatrix.from_json(dict(data, mutants=[]))))


def test_the_committed_fidelity_record_renders_the_committed_report():
    record = fidelity.FidelityRecord.from_json(json.loads((FIDELITY / "fidelity.json").read_text()))
    assert fidelity.markdown(record) == (FIDELITY / "fidelity.md").read_text()
    assert fidelity.html(record, {p: (FIDELITY / p).read_text() for p in record.plots}) == \
        (FIDELITY / "fidelity.html").read_text()


@pytest.mark.parametrize("row", [{"status": "almost reproduced"}, {"drop": "reason"}])
def test_a_fidelity_row_with_a_bad_status_or_a_missing_column_is_refused_naming_it(row):
    record = json.loads((FIDELITY / "fidelity.json").read_text())
    bad = record["rows"][2]
    if "drop" in row:
        del bad[row["drop"]]
    else:
        bad.update(row)
    with pytest.raises(ValueError, match=f"fidelity row 2 \\({bad['figure']!r}\\)"):
        fidelity.FidelityRecord.from_json(record)


def test_a_campaign_report_reads_back_to_the_same_json():
    cell = CampaignCell("op-law-float32", "claims", budget=50, rounds=2, examples=80, best_ratio=math.inf,
                        regimes={"long_row": 3}, status="violated", seconds=1.5,
                        violations=(Finding(2, "op-law-float32-ab", "broke", "violated", {"n": 3}, False),))
    report = CampaignReport({"rounds": 2}, (cell,), 1, (cell.id,))
    data = json.loads(json.dumps(report.to_json()))
    assert data["cells"][0]["best_ratio"] is None           # inf is written as null, and read back as inf
    again = CampaignReport.from_json(data)
    assert again == report and again.to_json() == data
    assert CampaignReport.from_json({"meta": data["meta"], "cells": data["cells"]}).unexpected == (cell.id,)
