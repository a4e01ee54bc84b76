"""A selection that matches no row (issue 21) is a usage error naming the argument, for check, prove and
verify alike -- never PASS over 0 rows -- and it leaves the last reports in --out untouched."""
from __future__ import annotations

from pathlib import Path

import pytest

from tokenlaw.app import cli
from tokenlaw.app.exits import EXIT_OK, EXIT_USAGE


@pytest.mark.parametrize("command", ["check", "prove", "verify"])
def test_a_selection_of_no_row_exits_2_and_keeps_the_reports(command, tmp_path, capsys):
    out = tmp_path / "reports"
    out.mkdir()
    kept = {name: f"earlier {name}\n" for name in ("conformance.json", "proofs.json", "verification.json")}
    for name, text in kept.items():
        (out / name).write_text(text)
    rc = cli.main([command, "--operator", "presence", "--contract", "causality", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    assert len(err.strip().splitlines()) == 1 and err.startswith("tokenlaw: error: --contract: ")
    assert "'presence' declares none of ['causality']" in err and "zero_absorption" in err   # what it does declare
    assert {p.name: p.read_text() for p in out.iterdir()} == kept


def test_a_selection_that_matches_some_row_still_runs(tmp_path):
    # the control: presence declares zero_absorption, so the same command with it runs
    assert cli.main(["prove", "--operator", "presence", "--contract", "zero_absorption", "--out", str(tmp_path)]) \
        == EXIT_OK
    assert Path(tmp_path / "proofs.json").exists()
