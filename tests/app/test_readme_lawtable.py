"""The README's law table is generated: it is exactly what ``tokenlaw report lawtable --readme`` renders from the
committed record (``reports/lawtable/conformance.json`` and ``proofs.json``), never typed by hand.

Attacked twice: a README with one stale cell, and a record whose verdict changed under an unchanged README.
"""
from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from tokenlaw.app import cli, lawtable_cmd
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.plan import plan
from tokenlaw.reports import lawtable

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RECORD = [ROOT / "reports" / "lawtable" / name for name in lawtable_cmd.RECORD]


def stale(readme_text: str, record) -> list[str]:
    """The lines where the README's table differs from the rendering of ``record`` (empty: up to date)."""
    want = lawtable_cmd.readme_block(record, README).splitlines()
    have = lawtable.generated(readme_text).splitlines()
    return [line for line in difflib.unified_diff(have, want, "README.md", "rendered from the record", lineterm="")
            if line.startswith(("-", "+"))]


def test_the_readme_table_is_the_records_rendering():
    bad = stale(README.read_text(encoding="utf-8"), RECORD)
    assert not bad, ("README.md's law table is stale; regenerate it with `tokenlaw report lawtable "
                     "reports/lawtable/conformance.json reports/lawtable/proofs.json --readme README.md`\n"
                     + "\n".join(bad))


def test_the_record_has_rows_of_both_tiers():
    """The control: the table the README shows is made of real verdicts of both tiers, not of empty cells."""
    table = lawtable_cmd.table(RECORD)
    assert table.tiers == ("symbolic", "fuzz") and "sdpa" in table.operators and "pn_fir_tau" in table.operators
    marks = [m for op in table.operators for c in lawtable.COLUMNS for m in table.cell(op, c).marks]
    assert {m.tier for m in marks} == {"symbolic", "fuzz"} and len(marks) > 2 * len(table.operators)


def test_the_record_is_the_registrys_table():
    """The record judged exactly the rows the registry declares for the table's operators today: a normaliser
    added, a claim or an expected violation changed since the record was made makes it (and the README) stale."""
    reg = default_registry()
    members = lawtable_cmd.operators(reg)
    recorded = json.loads(RECORD[0].read_text())
    assert sorted(lawtable_cmd.table(RECORD).operators) == sorted(members), (
        "the registry's law-table operators differ from the record's; re-record with `tokenlaw report lawtable "
        "--record reports/lawtable --readme README.md`")
    assert ({(r["id"], r["declared"]) for r in recorded["rows"]}
            == {(r.id, r.declared) for r in plan(reg, operators=members)})


def test_a_stale_cell_in_the_readme_is_caught():
    text = README.read_text(encoding="utf-8")
    block = lawtable.generated(text)
    row = next(line for line in block.splitlines() if line.startswith("| `sdpa` |"))
    seeded = row.replace(" ∎/✓ |", " ∎/✗ |", 1)         # sdpa's simplex: proved / holds -> proved / violated
    assert seeded != row, "the attack did not apply"
    bad = stale(text.replace(row, seeded), RECORD)
    assert f"-{seeded}" in bad and f"+{row}" in bad


def test_a_changed_record_makes_the_readme_stale(tmp_path):
    """A verdict that changed in the record (sdpa's simplex now violated) no longer matches the README."""
    docs = [json.loads(p.read_text()) for p in RECORD]
    row = next(r for r in docs[0]["rows"] if r["id"] == "sdpa-simplex")
    for c in row["cells"]:
        c["verdict"]["status"] = "violated"
    paths = []
    for doc, name in zip(docs, lawtable_cmd.RECORD):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(doc))
    bad = stale(README.read_text(encoding="utf-8"), paths)
    assert any(line.startswith("+| `sdpa` |") and "FAIL" in line for line in bad), bad


def test_the_command_writes_what_the_test_compares(tmp_path):
    """``--readme`` splices exactly :func:`readme_block` between the markers, leaving the rest alone."""
    page = tmp_path / "README.md"
    page.write_text(f"# x\n\n{lawtable.BEGIN}\nold\n{lawtable.END}\n\ntail\n", encoding="utf-8")
    assert cli.main(["report", "lawtable", *map(str, RECORD), "--readme", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert lawtable.generated(text) == lawtable_cmd.readme_block(RECORD, page)
    assert text.startswith("# x\n\n") and text.endswith("\n\ntail\n")


@pytest.mark.parametrize("argv, expected", [
    (["report", "lawtable"], "name the JSON reports"),
    (["report", "lawtable", "x.json", "--record", "d"], "give no reports with it"),
    (["report", "lawtable", "no-such.json"], "cannot read"),
])
def test_bad_arguments_are_refused_in_one_line(argv, expected, capsys):
    assert cli.main(argv) == 2
    assert expected in capsys.readouterr().err


def test_json_is_the_table_as_data(capsys):
    assert cli.main(["report", "lawtable", *map(str, RECORD), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cell = out["cells"]["sdpa"]["simplex"]
    assert out["tiers"] == ["symbolic", "fuzz"] and cell["state"] == "declared"
    assert [m["tier"] for m in cell["marks"]] == ["symbolic", "fuzz"]
    assert out["cells"]["sdpa"]["exact_zeros"]["state"] == lawtable.NO_CONTRACT
