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


def test_a_mistyped_contract_in_claims_names_the_closest(tmp_path, monkeypatch, capsys):
    import sys
    (tmp_path / "typo_ops.py").write_text(
        "from tokenlaw.operators.registry import Domain, declare\n\n\n"
        "def _params(gen, d_model, dtype=None):\n    return {}\n\n\n"
        "@declare(name='user_typo', domain=Domain(params=_params, dtypes=('float64',)), traits={'token_local'},\n"
        "         claims={'zero_absorbtion': 'a typo'})\n"
        "def user_typo(xp, x):\n    return x * 2\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        assert cli.main(["--operators", "typo_ops.py", "list"]) == 2
    finally:
        sys.modules.pop("typo_ops", None)
    assert "unknown contract 'zero_absorbtion'; did you mean 'zero_absorption'" in capsys.readouterr().err


def test_default_workers_run_a_small_check_in_this_process():
    """Issue 47, point 9: the default --workers started a LocalCluster for a small module (2x slower)."""
    from tokenlaw.app.argtypes import DefaultWorkers
    from tokenlaw.fuzz.rows import SMALL_RUN, runs_here
    args = cli.build_parser().parse_args(["check"])
    assert isinstance(args.workers, DefaultWorkers)
    assert runs_here(DefaultWorkers(2), None, SMALL_RUN - 1)          # the default: one process below SMALL_RUN
    assert not runs_here(DefaultWorkers(2), None, SMALL_RUN)
    assert not runs_here(2, None, SMALL_RUN - 1)                      # a typed --workers 2 is honoured
    typed = cli.build_parser().parse_args(["check", "--workers", "2"]).workers
    assert not isinstance(typed, DefaultWorkers)
    text = cli.build_parser()._subparsers._group_actions[0].choices["check"].format_help()
    assert f"fewer than {SMALL_RUN} cells" in " ".join(text.split())
