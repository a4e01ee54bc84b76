"""``tokenlaw report backends``: several backends' reports side by side, the cells where they differ first."""
from __future__ import annotations

import json

import pytest

from tokenlaw.app.cli import main
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.reports import backends as B
from tokenlaw.reports.document import Document
from tokenlaw.reports.meta import Meta


def _doc(backend, cells, declares=None):
    """A Document of sdpa cells {(contract, dtype): (status, discrepancy, bound)} judged on ``backend``."""
    rows = {}
    for (contract, dtype), (status, disc, bound) in cells.items():
        rows.setdefault(contract, []).append(Cell("sdpa", contract, backend, dtype,
                                                  V.Verdict(V.Status(status), disc, bound)))
    meta = {"backend": backend, **({"declares": declares} if declares else {})}
    return Document([Row("sdpa", c, "claims", "reason", cs) for c, cs in rows.items()], Meta.from_json(meta))


def test_outcomes_and_far_apart_ratios_differ_and_come_first():
    a = _doc("math", {("finite", "float32"): ("holds", 0.0, 0.0), ("differential", "float32"): ("holds", 0.5, 1.0),
                      ("differential", "float16"): ("holds", 0.2, 1.0), ("mask_respect", "float32"): ("holds", 0, 0)})
    b = _doc("flash", {("finite", "float32"): ("violated", 1.0, 0.0), ("differential", "float32"): ("holds", 0.01, 1.0),
                       ("differential", "float16"): ("holds", 0.1, 1.0)})
    backends, rows = B.compare([a, b])
    assert backends == ["math", "flash"]
    why = {(r.contract, r.dtype): r.why for r in rows}
    assert why[("finite", "float32")].startswith("outcomes differ")
    assert why[("differential", "float32")].startswith("ratios differ")      # 0.5 vs 0.01: 50-fold
    assert why[("differential", "float16")] == ""                           # 2-fold: an agreeing row
    assert why[("mask_respect", "float32")] == "not in every report"
    assert [r.differs for r in rows] == sorted((r.differs for r in rows), reverse=True)
    text = B.markdown([a, b])
    assert "**3 differ**" in text and "not in this report" in text


def test_it_refuses_one_report_or_one_backend_twice():
    a = _doc("math", {("finite", "float32"): ("holds", 0.0, 0.0)})
    with pytest.raises(InvalidArgument, match="at least two"):
        B.compare([a])
    with pytest.raises(InvalidArgument, match="same backend"):
        B.compare([a, a])


def test_the_torch_backends_side_by_side_from_the_command_line(tmp_path, capsys):
    paths = []
    for backend in ("sdpa-math", "sdpa-flash"):
        out = tmp_path / backend
        assert main(["check", "--backend", backend, "--operator", "sdpa", "--contract", "finite",
                     "--contract", "mask_respect", "--profile", "smoke", "--workers", "1", "--out", str(out)]) == 0
        paths.append(str(out / f"conformance-{backend}.json"))
        meta = json.loads((out / f"conformance-{backend}.json").read_text())["meta"]
        assert meta["declares"]["masked_row"] == {"sdpa": 0.0} and "sdpa" in meta["declares"]["standard_backward"]
    capsys.readouterr()
    assert main(["report", "backends", *paths, "--out", str(tmp_path / "backends.md")]) == 0
    text = (tmp_path / "backends.md").read_text()
    assert "`sdpa-math`: masked_row {'sdpa': 0.0}" in text and "| `sdpa` | finite | float32 |" in text
    assert text.count("| `sdpa` |") == 8            # finite x 4 dtypes, mask_respect x 4, each one row
