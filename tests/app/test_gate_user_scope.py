"""``tokenlaw --operators M gate`` runs M's cells only, and a known-failures typo is said before any re-run
(issue 47, point 6: the gate re-ran and recorded all 651 built-in cells, and named the typo after 50 s)."""
from __future__ import annotations

import json
import textwrap

import pytest

from tokenlaw.app import cli
from tokenlaw.orchestration import runs

OPS = textwrap.dedent('''
    from tokenlaw.operators.registry import Domain, declare


    def _params(gen, d_model, dtype=None):
        return {}


    @declare(name="user_twice", domain=Domain(params=_params, dtypes=("float64",), n_max=3),
             traits={"token_local"}, claims={"zero_absorption": "2 * 0 = 0"})
    def user_twice(xp, x):
        return x * 2
''')


@pytest.fixture
def project(user_module):
    return user_module("twice_ops", OPS)


def test_gate_update_baseline_records_only_the_users_cells(project, capsys):
    code = cli.main(["--operators", "twice_ops.py", "gate", "--update-baseline", "--baseline", "base.json",
                     "--known-failures", "none.txt", "--out", "r"])
    assert code == 0, capsys.readouterr()
    doc = json.loads((project / "base.json").read_text())
    assert {r["operator"] for r in doc["rows"]} == {"user_twice"}, {r["operator"] for r in doc["rows"]}


def test_known_failures_typo_is_refused_before_any_rerun(project, capsys, monkeypatch):
    (project / "kf.txt").write_text("user_twicee-zero_absorption  2099-01-01  a typo of the operator's name\n")

    def no_run(*a, **k):
        raise AssertionError("the gate re-ran before checking its known-failures file")

    monkeypatch.setattr(runs, "check", no_run)
    code = cli.main(["--operators", "twice_ops.py", "gate", "--update-baseline", "--baseline", "base.json",
                     "--known-failures", "kf.txt", "--out", "r"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "kf.txt:1" in err and "user_twice-zero_absorption" in err, err
