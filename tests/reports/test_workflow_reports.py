"""Reports: deterministic for a seed, every format from one document, and the HTML renders in Chromium.

The run is small but real: presence and otransformer (whose closure
verdicts carry per-layer data for the closure chart), three examples.
"""
from __future__ import annotations

import html as htmllib
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tokenlaw.app import cli
from tokenlaw.reports import formats, writers
from tokenlaw.reports.document import Document

ARGS = ["check", "--operator", "presence", "--operator", "otransformer", "--contract", "closure",
        "--contract", "zero_absorption", "--contract", "null_source_insertion", "--examples", "3", "--json"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs, each from its own directory with the same ``--out``: the report records the replay directory
    as seen from where the run ran (``replays_from_run_dir``, for a replay command that works when pasted)."""
    out, before = [], os.getcwd()
    for i in range(2):
        d = tmp_path_factory.mktemp(f"run{i}")
        os.chdir(d)
        try:
            assert cli.main([*ARGS, "--out", "reports"]) in (0, 1)
        finally:
            os.chdir(before)
        out.append(d / "reports")
    return out


def test_same_seed_same_reports(runs):
    """Every report file is byte-identical for a seed; the timings live in conformance.timings.json alone."""
    a, b = runs
    for ext in ("json", "md", "xml", "html"):
        assert (a / f"conformance.{ext}").read_bytes() == (b / f"conformance.{ext}").read_bytes(), ext
    doc = json.loads((a / "conformance.json").read_text())
    assert doc == writers.stable(doc)                   # no VOLATILE field left in the document
    timings = json.loads((a / "conformance.timings.json").read_text())
    cells = [c["id"] for r in doc["rows"] for c in r["cells"]]
    assert timings["seconds"] > 0 and sorted(timings["cells"]) == sorted(cells)


def test_every_format_is_a_view_of_the_json(runs):
    d = runs[0]
    doc = json.loads((d / "conformance.json").read_text())
    assert doc["schema"] == writers.SCHEMA_VERSION
    for fmt in ("md", "xml", "html"):
        assert (d / f"conformance.{fmt}").read_text() == formats.render(Document.from_json(doc), fmt)
    xml = (d / "conformance.xml").read_text()
    cells = [c["id"] for r in doc["rows"] for c in r["cells"]]
    assert xml.count("<testcase ") == len(cells) and all(f'name="{c}"' in xml for c in cells)
    md = (d / "conformance.md").read_text()
    assert md.index("**PASS**") < md.index("## Matrix")          # the verdict comes first
    assert doc["meta"]["kernel_sources"].get("kernels/__init__.py")


def test_junit_failure_and_skip_per_cell():
    doc = {"meta": {}, "rows": [
        {"id": "a-law", "operator": "a", "contract": "law", "law": "L", "exact": True, "declared": "claims",
         "reason": "r", "outcome": "UNEXPECTED violation", "cells": [
             {"id": "a-law-eager-float32", "backend": "eager", "dtype": "float32", "outcome": "UNEXPECTED violation",
              "verdict": {"status": "violated", "discrepancy": 1.0, "bound": 0.0, "detail": "boom", "examples": 1,
                          "counterexample": {"n": 1}}},
             {"id": "a-law-triton-float32", "backend": "triton", "dtype": "float32", "outcome": "not runnable here",
              "verdict": {"status": "not_runnable", "discrepancy": 0.0, "bound": 0.0, "detail": "no GPU",
                          "examples": 0}}]}]}
    doc = Document.from_json(doc)
    xml = formats.render(doc, "xml")
    assert 'failures="1"' in xml and 'skipped="1"' in xml and "n=1" in xml and "no GPU" in xml
    for fmt in ("md", "html"):        # the reason a cell could not run is shown, not hidden
        assert "a-law-triton-float32" in formats.render(doc, fmt) and "no GPU" in formats.render(doc, fmt)


def test_plots_are_drawn_from_the_verdicts(runs):
    d = runs[0]
    doc = json.loads((d / "conformance.json").read_text())
    page = (d / "conformance.html").read_text()
    cells = {c["id"]: (r, c) for r in doc["rows"] for c in r["cells"]}
    tips = re.findall(r'<circle class="pt"[^>]*><title>([^<]*)</title>', page)
    scatter = [htmllib.unescape(t) for t in tips if ", bound " in t]
    # every judged cell with a finite discrepancy, exact (bound 0, in the '0' lane) and tolerance alike
    expected = [cid for cid, (r, c) in cells.items()
                if c["verdict"]["status"] in ("holds", "violated") and math.isfinite(float(c["verdict"]["discrepancy"]))]
    assert scatter and sorted(t.split(":")[0] for t in scatter) == sorted(expected)
    for tip in scatter:
        cid = tip.split(":")[0]
        v = cells[cid][1]["verdict"]
        assert f"discrepancy {v['discrepancy']:.3g}" in tip and f"bound {v['bound']:.3g}" in tip
    assert "otransformer: closure per layer" in page
    layers = cells["otransformer-closure-eager-float64"][1]["verdict"]["extra"]["layers"]
    assert sum(f"otransformer-closure-eager-float64 layer {p['layer']}: old_shift" in page for p in layers) == len(layers)
    # one dtype drawn (two series), the others summarised, not eight series on top of each other
    assert "otransformer-closure-eager-float32 layer" not in page and "Other dtypes: float32: max old shift" in page


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed (apt-get install -y chromium)")
def test_html_renders_in_headless_chromium(runs, tmp_path):
    page = runs[0] / "conformance.html"
    out = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-background-networking", "--disable-component-update", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=2000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    dom = out.stdout
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-rendered="ok"' in body, "the load handler ran"
    assert 'data-errors="0"' in body, "no script errors while rendering"
    drawn = int(re.search(r'data-charts-drawn="(\d+)"', body).group(1))
    assert drawn == dom.count('class="chart"') and drawn >= 3      # every chart laid out with a real box
    assert '<table id="matrix">' in dom and "otransformer" in dom
    assert "Uncaught" not in out.stderr


def test_tau_sweep_chart_drawn_when_a_verdict_carries_one():
    sweep = [{"tau": t, "row_mass": m} for t, m in ((0.0, 0.9), (0.5, 0.4), (1.0, 0.002))]
    doc = {"meta": {}, "rows": [
        {"id": "pn_fir_tau-silence", "operator": "pn_fir_tau", "contract": "silence", "law": "L", "exact": True,
         "declared": "claims", "reason": "r", "outcome": "holds", "cells": [
             {"id": "pn_fir_tau-silence-eager-float32", "backend": "eager", "dtype": "float32", "outcome": "holds",
              "verdict": {"status": "holds", "discrepancy": 0.0, "bound": 0.0, "detail": "", "examples": 3,
                          "extra": {"tau_sweep": sweep}}}]}]}
    page = formats.render(Document.from_json(doc), "html")
    assert "<h2>Tau sweeps</h2>" in page
    for p in sweep:
        assert f"tau {p['tau']}: row_mass = {p['row_mass']}" in page
    # an exact cell with bound 0 is plotted in the bound axis' '0' lane (a failing exact run plots its failures)
    assert "Discrepancy vs bound" in page and "drawn in the '0' lane of the bound axis" in page
    assert "pn_fir_tau-silence-eager-float32" in page.split("Discrepancy vs bound")[1].split("</figure>")[0]


def test_ci_workflow_and_pre_commit_hook_run_the_gate():
    yaml = pytest.importorskip("yaml", reason="PyYAML not installed: the example files are not parsed")
    docs = Path(__file__).resolve().parents[2] / "docs"
    ci = yaml.safe_load((docs / "ci-workflow.yml").read_text())
    steps = [s.get("run", "") for s in ci["jobs"]["gate"]["steps"]]
    assert any(s.startswith("tokenlaw gate") for s in steps)
    on = ci[True] if True in ci else ci["on"]      # YAML 1.1 reads the key `on` as a boolean
    assert "kernels/**" in on["pull_request"]["paths"] and "operators/**" in on["pull_request"]["paths"]
    (hook,) = yaml.safe_load((docs / "pre-commit-hooks.yaml").read_text())
    assert hook["entry"] == "tokenlaw gate" and hook["pass_filenames"] is False
    assert re.search(hook["files"], "kernels/oattention_fwd.py") and re.search(hook["files"], "operators/x.py")
    assert not re.search(hook["files"], "docs/workflow.md")


def _cell(cid, dtype, outcome, status, disc, bound):
    return {"id": cid, "backend": "eager", "dtype": dtype, "outcome": outcome,
            "verdict": {"status": status, "discrepancy": disc, "bound": bound, "detail": "", "examples": 3}}


def test_plot_classes_follow_the_row_and_a_tiny_bound_does_not_squash_the_rest():
    """A bf16 cell that did not reproduce an expected violation another dtype reproduced is not 'failing';
    a bound near 1e-38 is drawn on the axis edge instead of stretching the axis over 30 decades."""
    rows = [{"id": "a-law", "operator": "a", "contract": "law", "law": "L", "exact": False, "declared": "violates",
             "reason": "r", "outcome": "expected violation reproduced",
             "cells": [_cell("a-law-eager-float32", "float32", "expected violation reproduced", "violated", 1.0, 1e-6),
                       _cell("a-law-eager-bfloat16", "bfloat16", "expected violation NOT reproduced", "holds",
                             1e-3, 1e-2)]}]
    rows.append({"id": "b-law", "operator": "b", "contract": "law", "law": "L", "exact": False, "declared": "claims",
                 "reason": "r", "outcome": "holds",
                 "cells": [_cell(f"b-law-eager-bfloat16-{i}", "bfloat16", "holds", "holds", 10.0 ** -(3 + i / 4),
                                 10.0 ** -(2 + i / 4)) for i in range(8)]
                 + [_cell("b-law-eager-bfloat16-tiny", "bfloat16", "holds", "holds", 1e-39, 1e-38)]})
    page = formats.render(Document.from_json({"meta": {}, "rows": rows}), "html")
    assert "failing row (" not in page and "expected violation not reproduced in this dtype (row passes) (1)" in page
    ticks = [int(e) for e in re.findall(r">1e(-?\d+)</text>", page.split("bfloat16: discrepancy vs bound")[-1].split("</svg>")[0])]
    assert min(ticks) > -20, ticks                       # the axis is not stretched down to 1e-38
    assert "values outside" in page and "drawn on the axis edge" in page


def test_progress_lines_carry_an_eta_live_on_a_terminal_plain_in_logs():
    import io

    from tokenlaw.app.progress import Progress

    class Clock:
        t = 0.0

        def __call__(self):
            return self.t

    clock, log = Clock(), io.StringIO()
    p = Progress(log, live=False, clock=clock)
    clock.t = 10.0
    p.write("[   1/4]   10.0s  a-law  holds\n")
    clock.t = 20.0
    p.write("[   2/4]   20.0s  b-law  holds\n")
    assert log.getvalue().splitlines() == ["[   1/4] ETA 30s   10.0s  a-law  holds",
                                           "[   2/4] ETA 20s   20.0s  b-law  holds"]
    tty = io.StringIO()
    live = Progress(tty, live=True, clock=clock)
    live.write("[   1/2] x\n")
    live.write("[   2/2] y\n")
    live.close_line()
    assert tty.getvalue().count("\r") == 2 and tty.getvalue().count("\n") == 1      # one line, updated in place
