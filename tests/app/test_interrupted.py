"""Ctrl-C during a check (issue 21): Hypothesis' notes go to stderr, and earlier reports are marked as earlier."""
from __future__ import annotations

import pytest

from tokenlaw.app import cli
from tokenlaw.orchestration import runs
from tokenlaw.reports import writers

ARGS = ["check", "--operator", "presence", "--contract", "zero_absorption", "--examples", "3",
        "--database", "none", "--workers", "1"]


def test_an_interrupted_check_marks_the_earlier_reports_and_a_finished_one_clears_it(tmp_path, monkeypatch, capsys):
    out = tmp_path / "reports"
    assert cli.main([*ARGS, "--out", str(out), "--replays", str(tmp_path / "r")]) == 0
    before = (out / "conformance.md").read_text()

    def stopped(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "check", stopped)
    capsys.readouterr()
    assert cli.main([*ARGS, "--out", str(out), "--replays", str(tmp_path / "r")]) == 130
    err = capsys.readouterr().err
    marker = writers.interrupted_marker(out)
    assert marker.exists() and "earlier run" in marker.read_text() and "tokenlaw check" in marker.read_text()
    assert f"the reports in {out} are from an earlier run" in err and err.rstrip().endswith("tokenlaw: interrupted")
    assert (out / "conformance.md").read_text() == before          # the earlier reports are left, not rewritten
    monkeypatch.undo()
    assert cli.main([*ARGS, "--out", str(out), "--replays", str(tmp_path / "r")]) == 0
    assert not marker.exists()


def test_nothing_is_marked_where_no_report_was(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runs, "check", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert cli.main([*ARGS, "--out", str(tmp_path / "empty")]) == 130
    assert not (tmp_path / "empty").exists() or not any((tmp_path / "empty").iterdir())


def test_hypothesis_notes_go_to_stderr(capsys, monkeypatch, tmp_path):
    """Whatever Hypothesis reports while the engine searches (the "@seed(...)" hint of an interrupted search)."""
    import hypothesis.reporting
    import torch
    from hypothesis.errors import NoSuchExample

    from tokenlaw.fuzz import engine, strategies
    from tokenlaw.properties.catalogue import CONTRACTS, default_registry

    def noisy_find(*a, **k):
        hypothesis.reporting.report("You can add @seed(1) to this test")
        raise NoSuchExample("none")

    # the seeded search runs in strategies.banded_find (the search, then a band it never drew), inside the
    # engine's reporter
    monkeypatch.setattr(strategies, "find", noisy_find)
    engine.run_cell(default_registry()["presence"], CONTRACTS["zero_absorption"], torch.float64, examples=3,
                    seed=0, replay_dir=tmp_path)
    got = capsys.readouterr()
    assert "@seed" in got.err and "@seed" not in got.out
