"""The README's paragraph on the papers' figures is generated from the committed record (``reports/fidelity/fidelity.json``,
written by ``tokenlaw reproduce all --out reports/fidelity --readme README.md``), never typed; attacked with a changed status."""
from __future__ import annotations

import json
from pathlib import Path

from tokenlaw.reports import fidelity

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RECORD = ROOT / "reports" / "fidelity" / "fidelity.json"


def rendered(record: dict) -> str:
    return fidelity.readme(fidelity.FidelityRecord.from_json(record), "reports/fidelity/fidelity.md")


def test_the_readme_paragraph_is_the_records_rendering():
    record = json.loads(RECORD.read_text())
    assert fidelity.generated(README.read_text(encoding="utf-8")) == rendered(record), (
        "README.md's fidelity paragraph is stale: regenerate it with `tokenlaw reproduce all --out reports/fidelity --readme README.md`")
    assert not record["quick"], "the recorded run is a full-size one"


def test_a_changed_status_makes_the_paragraph_stale():
    record = json.loads(RECORD.read_text())
    row = next(r for r in record["rows"] if r["status"] == "reproduced")
    row["status"] = "not reproduced"
    assert fidelity.generated(README.read_text(encoding="utf-8")) != rendered(record)


def test_the_readme_links_the_report():
    assert "reports/fidelity/fidelity.md" in README.read_text(encoding="utf-8")
    assert (ROOT / "reports" / "fidelity" / "fidelity.md").exists()
