"""The campaign's page to watch: what it shows, that it reloads while the campaign runs and stops after, and
that it renders in headless Chromium (hand-built reports here; tests/fuzz/test_fuzz_campaign_page.py
watches a real campaign's page change as its rounds finish)."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tokenlaw.reports.campaign import CampaignReport
from tokenlaw.reports.campaign_page import REFRESH_S, page

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _doc(finished: bool) -> CampaignReport:
    meta = dict(kind="campaign", minutes=2, seconds=40.0, rounds=3, interrupted=False, finished=finished, seed=0,
                backend="eager", database="none", mutant=None, replays="reports/replays",
                dask={"scheduler": "tcp://127.0.0.1:8786", "dashboard": "http://127.0.0.1:8787/status",
                      "workers": {"tcp://127.0.0.1:4001": 9}})
    cells = [dict(id="oattention-finite-float16", declared="claims", budget=100, status="violated", rounds=3,
                  examples=400, seconds=20.0, best_ratio=0.5, regimes={"long_row": 12, "scores_low": 0},
                  violations=[dict(round=3, replay="oattention-finite-float16-0123456789", status="violated",
                                   detail="output not finite: <inf> at row 130", counterexample="Case(n=130)",
                                   from_database=False)]),
             dict(id="sdpa-null_receiver-float32", declared="violates", budget=25, status="violated", rounds=3,
                  examples=6, seconds=0.5, best_ratio=0.0, regimes={}, violations=[
                      dict(round=1, replay="sdpa-null_receiver-float32-aaaa", status="violated", detail="null out",
                           counterexample="Case(n=1)", from_database=True)])]
    return CampaignReport.from_json({"meta": meta, "cells": cells})


def test_the_page_shows_cells_rates_regimes_and_findings():
    html = page(_doc(False))
    assert f'<meta http-equiv="refresh" content="{REFRESH_S}">' in html           # reloads while it runs
    assert "round 3, 40 s of 120 s; 2 cells" in html and "10 examples/s" in html  # 406 examples / 40 s
    assert "<td>400</td><td>20</td><td>100</td><td>0.5</td>" in html               # examples, per s, budget, ratio
    assert 'long_row 12 <span class="never">(never: scores_low)</span>' in html
    assert "&lt;inf&gt;" in html and "<inf>" not in html                         # the detail is escaped
    assert "tokenlaw replay oattention-finite-float16-0123456789 --replays reports/replays" in html
    assert '<a href="http://127.0.0.1:8787/status">' in html and "tcp://127.0.0.1:4001</code> (9)" in html
    assert "1 of a claimed law" in html


def test_the_finished_page_stops_reloading():
    assert "http-equiv" not in page(_doc(True)) and "finished: round 3" in page(_doc(True))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_the_page_renders_in_headless_chromium(tmp_path):
    (tmp_path / "campaign.html").write_text(page(_doc(True)))
    dom = dump(tmp_path / "campaign.html", tmp_path)
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-rendered="ok"' in body and 'data-cells="2"' in body, body
    assert dom.count("<li>") == 2


def dump(path, tmp_path) -> str:
    """The DOM headless Chromium builds from the file at ``path`` (its scripts run)."""
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                          "--virtual-time-budget=2000", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout
