"""docs/measurements.md states only what its records say: the generated block is the records' rendering."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tokenlaw.app import cli, docs_cmd, measure
from tokenlaw.operators import InvalidArgument
from tokenlaw.reports import measurements as m

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "reports" / "measurements"
PAGE = ROOT / "docs" / "measurements.md"


def _record(**over) -> dict:
    base = {"command": "python3 -c pass", "runs": 3, "min_s": 0.0123, "median_s": 0.0456,
            "machine": {"cores": 2, "cpu": "Test CPU"}, "date": "2026-01-01T00:00:00Z", "commit": "abc1234"}
    return {**base, **over}


def test_the_committed_page_is_what_the_records_render():
    """A number typed into the block by hand, or a record added without `--write`, fails here."""
    records = m.load(RECORDS)
    assert records, "no measurement record under reports/measurements/"
    assert m.generated(PAGE.read_text(encoding="utf-8")) == m.render(records)


def test_a_hand_edit_of_a_number_is_caught(tmp_path):
    """Attack: the page with one digit of a rendered number changed no longer matches its records."""
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "startup.json").write_text(json.dumps(_record()))
    page = m.splice(PAGE.read_text(encoding="utf-8"), m.render(m.load(tmp_path / "r")))
    assert "0.046" in m.generated(page)
    tampered = page.replace("| 0.046 |", "| 0.040 |")
    assert tampered != page and m.generated(tampered) != m.render(m.load(tmp_path / "r"))


def test_write_renders_every_record_and_keeps_the_history(tmp_path):
    records, page = tmp_path / "records", tmp_path / "measurements.md"
    records.mkdir()
    (records / "a.json").write_text(json.dumps(_record(median_s=1.5, min_s=1.25)))
    (records / "b.json").write_text(json.dumps(_record(command="tokenlaw --help", note="friction",
                                                       baselines=[_record(command="python3 -c 'import torch'",
                                                                          min_s=2.0, median_s=2.5)])))
    page.write_text(f"# M\n\n{m.BEGIN}\nold 9.999\n{m.END}\n\n## History\nkept 3 min 18 s\n")
    docs_cmd.write_measurements(records, page)
    text = page.read_text()
    assert "old 9.999" not in text and "## History\nkept 3 min 18 s" in text
    block = m.generated(text)
    assert "| `a` | `python3 -c pass` | 3 | 1.250 | 1.500 | 2 cores, Test CPU |" in block
    assert "| `b` baselines | `python3 -c 'import torch'` | 3 | 2.000 | 2.500 |" in block
    assert '- `b` note: "friction"' in block
    docs_cmd.write_measurements(records, page)                   # idempotent
    assert page.read_text() == text


@pytest.mark.parametrize("over, field", [
    ({"median_s": None}, "median_s"), ({"runs": 0}, "runs"), ({"runs": 2.5}, "runs"), ({"min_s": -1}, "min_s"),
    ({"machine": {"cores": 2}}, "machine"), ({"min_s": 3.0, "median_s": 1.0}, "min_s"), ({"runs": True}, "runs"),
])
def test_a_bad_record_is_refused_naming_the_field(over, field):
    with pytest.raises(InvalidArgument, match=rf"rec\.json: {field}"):
        m.parse("rec", _record(**over), "rec.json")


def test_a_record_without_a_field_is_refused(tmp_path):
    data = _record()
    del data["commit"]
    (tmp_path / "x.json").write_text(json.dumps(data))
    with pytest.raises(InvalidArgument, match="missing field.*commit"):
        m.load(tmp_path)
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(InvalidArgument, match="x.json: not a readable JSON record"):
        m.load(tmp_path)


def test_the_page_needs_its_markers():
    with pytest.raises(InvalidArgument, match="expected one"):
        m.splice("# no markers\n", "x")
    with pytest.raises(InvalidArgument, match="expected one"):
        m.splice(f"{m.END}\n{m.BEGIN}\n", "x")


def test_the_cli_prints_the_page_and_refuses_write_on_another_topic(capsys):
    assert cli.main(["docs", "measurements"]) == 0
    assert m.BEGIN in capsys.readouterr().out
    assert cli.main(["docs", "mathematics", "--write"]) == 2
    assert "--write: only 'tokenlaw docs measurements --write'" in capsys.readouterr().err


def test_measure_writes_a_record_the_renderer_reads(tmp_path, capsys):
    assert measure.main(["quick", "--runs", "2", "--out", str(tmp_path), "--", sys.executable, "-c", "pass"]) == 0
    (record,) = m.load(tmp_path)
    assert record.name == "quick" and record.runs == 2 and 0 < record.min_s <= record.median_s
    assert record.machine["cores"] >= 1 and record.commit and "load_average_1min" in record.extra
    assert measure.main(["bad", "--runs", "1", "--out", str(tmp_path), "--", sys.executable, "-c",
                         "raise SystemExit(3)"]) == 2
    assert "exited 3; not a measurement" in capsys.readouterr().err
    assert not (tmp_path / "bad.json").exists()
