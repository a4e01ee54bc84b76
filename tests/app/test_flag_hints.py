"""A mistyped flag or command gets the closest names; a global flag after the command says where it goes
(issue 47, point 9).  argparse only: nothing imports torch."""
from __future__ import annotations

import pytest

from tokenlaw.app import cli


@pytest.mark.parametrize("argv, hint", [
    (["campaign", "--minutes", "1", "--operators", "x.py"], "--operators is tokenlaw's own flag: put it before the command"),
    (["check", "--wrokers", "2"], "--wrokers: did you mean --workers"),
    (["chek"], "did you mean check?"),
    (["replay", "some-id", "--expect-fixd"], "did you mean --expect-fixed"),
])
def test_usage_errors_name_the_closest(argv, hint, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert hint in err and err.count("\n") == 1, err
