"""An operator declared with ``Domain()`` (no params) runs in every tier's entry point (issue 19, point 8b).

``tokenlaw check`` used to exit 70 on it: the regimes asked ``Domain.params`` for the parameter names,
and the case built its parameters from it, both calling None.  ``Domain.draw`` is the one place that
turns "no params" into ``{}``.
"""
from __future__ import annotations

import json
import sys
import textwrap

import pytest
import torch

from tokenlaw.app import cli
from tokenlaw.fuzz.engine import run_cell
from tokenlaw.fuzz.regimes import applicable
from tokenlaw.operators.registry import Domain
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS, collect

USER = textwrap.dedent('''
    """A user's operators declared with Domain(): no parameters at all."""
    from tokenlaw.operators import arguments
    from tokenlaw.operators.registry import Domain, declare


    @declare(name="doubled", domain=Domain(), traits={"token_local"}, claims={"zero_absorption": "2x maps 0 to 0"})
    def doubled(xp, x):
        arguments.tokens(x)
        return x + x


    @declare(name="shifted", domain=Domain(), traits={"token_local"},
             claims={"zero_absorption": "claimed, but x + 1 maps 0 to 1"})
    def shifted(xp, x):
        arguments.tokens(x)
        return x + 1
''')


@pytest.fixture
def user(tmp_path, monkeypatch):
    (tmp_path / "paramless.py").write_text(USER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    yield tmp_path
    sys.modules.pop("paramless", None)


def test_domain_without_params_draws_no_parameters():
    assert Domain().draw(torch.Generator().manual_seed(0), 4) == {}


def test_check_runs_an_operator_declared_with_domain(user, capsys):
    code = cli.main(["--operators", "paramless", "check", "--operator", "doubled", "--operator", "shifted",
                     "--contract", "zero_absorption", "--profile", "smoke", "--out", str(user / "out"),
                     "--progress", "off"])
    err = capsys.readouterr().err
    assert code == 1, err                       # not 70: it ran, and the wrong claim is a finding
    rows = {r["id"]: r["outcome"] for r in json.loads((user / "out" / "conformance.json").read_text())["rows"]}
    assert rows == {"doubled-zero_absorption": V.Outcome.HOLDS, "shifted-zero_absorption": V.Outcome.UNEXPECTED}, rows


def test_a_cell_of_a_parameterless_operator_is_judged(user):
    import paramless  # noqa: F401  (the user's module, on sys.path for this test)

    reg = collect(sys.modules["paramless"])
    assert applicable(reg["doubled"], ("long_row", "tau_far", "scores_low")) == ()
    v = run_cell(reg["shifted"], CONTRACTS["zero_absorption"], torch.float64, examples=5, replay_dir=None)
    assert v.status == V.Status.VIOLATED and v.examples >= 1
