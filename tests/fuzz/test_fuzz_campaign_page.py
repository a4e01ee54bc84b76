"""A real campaign's page to watch: rewritten as rounds finish, reloading while it runs, rendered by headless
Chromium mid-run; the campaign prints where the page is and the Dask cluster (its dashboard when served)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tokenlaw.reports.campaign_page import REFRESH_S

pytestmark = pytest.mark.slow

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
LIMIT = 240


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_the_page_follows_the_rounds_and_renders_mid_run(tmp_path):
    argv = [sys.executable, "-m", "tokenlaw.app.cli", "campaign", "--operator", "sdpa", "--contract", "null_receiver",
            "--contract", "finite", "--dtype", "float32", "--minutes", "0.4", "--workers", "1", "--out", "reports"]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    watched = tmp_path / "reports" / "campaign.html"
    seen = {}                                  # rounds -> the page's text as it stood then (running)
    deadline = time.monotonic() + LIMIT
    try:
        while proc.poll() is None:
            assert time.monotonic() < deadline, "the campaign overran its limit"
            if watched.is_file():
                text = watched.read_text()
                if 'data-finished="false"' in text:
                    seen.setdefault(int(re.search(r'data-rounds="(\d+)"', text).group(1)), text)
            time.sleep(0.1)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    err = err.decode()
    assert proc.returncode == 0, err[-3000:]
    assert f"watch {watched.resolve().as_uri()}" in err and "dask: 1 worker, scheduler tcp://" in err
    assert len(seen) >= 2 and 0 in seen, sorted(seen)          # the page before round 1 and after a round
    last = seen[max(seen)]
    assert f'<meta http-equiv="refresh" content="{REFRESH_S}">' in last
    final = watched.read_text()
    assert 'data-finished="true"' in final and "http-equiv" not in final
    assert "sdpa-null_receiver-float32-" in final               # the finding, with its replay command
    (tmp_path / "mid.html").write_text(last)
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                          "--virtual-time-budget=2000", "--dump-dom", (tmp_path / "mid.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    assert 'data-rendered="ok"' in body and 'data-cells="2"' in body, body
