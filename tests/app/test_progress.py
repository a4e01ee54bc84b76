"""Progress: an ETA predicted from measured per-cell cost, and a heartbeat during long rows on a terminal."""
from __future__ import annotations

import io
import time
import types

import pytest

from tokenlaw.app.progress import HEARTBEAT, CostModel, Progress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_eta_is_predicted_from_the_cost_of_cells_like_the_ones_left():
    """Two cheap cells done, two expensive ones planned: the mean over all finished cells would say 2 s; the
    model knows the expensive contract's cost once one of its cells finished."""
    keys = [("a", "cheap"), ("a", "cheap"), ("a", "slow"), ("b", "slow"), ("c", "slow")]
    m = CostModel(keys)
    assert m.seconds_left() is None                       # nothing measured yet
    m.done(("a", "cheap"), 1.0)
    m.done(("a", "cheap"), 1.0)
    assert m.seconds_left() == 3.0                        # unknown contracts: the mean of any cell
    m.done(("a", "slow"), 60.0)
    assert m.seconds_left() == 120.0                      # b/slow and c/slow cost what a/slow cost
    m.done(("b", "slow"), 30.0)
    assert m.seconds_left() == 45.0                       # c/slow: the contract's mean over a and b
    assert CostModel(keys, workers=3).seconds_left() is None
    w = CostModel(keys, workers=2)
    w.done(("a", "cheap"), 2.0)
    assert w.seconds_left() == 4 * 2.0 / 2                # spread over the workers


def test_progress_line_uses_the_cost_model():
    clock = Clock()
    out = io.StringIO()
    p = Progress(out, live=False, clock=clock)
    p.planned([("a", "cheap"), ("a", "slow"), ("b", "slow")])
    clock.t = 1.0
    p.cell_done(("a", "cheap"), 1.0)
    p.write("[   1/3]   1.0s  a-cheap  holds\n")
    clock.t = 61.0
    p.cell_done(("a", "slow"), 60.0)
    p.write("[   2/3]  61.0s  a-slow  holds\n")
    first, second = out.getvalue().splitlines()
    assert first.startswith("[   1/3] ETA 2s ")              # 2 unknown cells at the mean 1 s
    assert second.startswith("[   2/3] ETA 1m00s ")          # b/slow costs what a/slow cost


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_heartbeat_on_a_terminal_during_a_long_row():
    out = TTY()
    p = Progress(out, live=True)
    p.counter = types.SimpleNamespace(value=1234)
    p.planned([("a", "slow")] * 3)
    p.write("[   1/3]   0.1s  a-slow  holds\n")
    time.sleep(HEARTBEAT + 1.2)                           # a row that takes longer than the heartbeat
    p.close_line()
    text = out.getvalue()
    assert "running: 1234 examples judged" in text and "ex/s" in text
    assert text.endswith("\n")                            # the live line is ended when the run is over
    quiet = io.StringIO()
    q = Progress(quiet, live=False)
    q.planned([("a", "slow")])
    time.sleep(0.7)
    q.close_line()
    assert quiet.getvalue() == ""                         # a log gets no heartbeat
    assert HEARTBEAT <= 5


def test_startup_benchmark_writes_the_record_docs_read(tmp_path, monkeypatch):
    """The record is a measurement record (the first command measured, the others under compared_with, each
    with runs, min_s, median_s, samples_s) that reports.measurements reads; the real commands are swapped for
    two bare interpreters so the test takes a second; the measured file is reports/measurements/help_startup.json."""
    import json
    import sys

    from tokenlaw.app import startup_bench
    from tokenlaw.reports import measurements

    assert list(startup_bench.COMMANDS)[0] == "tokenlaw --help"
    assert set(startup_bench.COMMANDS) >= {"python -c pass", 'python -c "import torch"', "tokenlaw --help"}
    monkeypatch.setattr(startup_bench, "COMMANDS", {"a": [sys.executable, "-c", "pass"],
                                                    "b": [sys.executable, "-c", "import json"]})
    out = tmp_path / "m" / "help_startup.json"
    startup_bench.main(["--runs", "3", "--out", str(out)])
    rec = json.loads(out.read_text())
    assert rec["command"] == "a" and [r["command"] for r in rec["compared_with"]] == ["b"]
    for r in [rec, *rec["compared_with"]]:
        assert r["runs"] == 3 and len(r["samples_s"]) == 3
        assert 0 < r["min_s"] <= r["median_s"] <= max(r["samples_s"])
    (read,) = measurements.load(out.parent)
    assert read.name == "help_startup" and read.command == "a" and read.min_s == rec["min_s"]
    assert "| `help_startup` compared_with | `b` | 3 |" in measurements.render([read])
    monkeypatch.setattr(startup_bench, "COMMANDS", {"fails": [sys.executable, "-c", "raise SystemExit(5)"]})
    with pytest.raises(RuntimeError, match="exited 5"):
        startup_bench.main(["--runs", "1", "--out", str(out)])
