"""A user's own contract runs where their operators do (issue 20, point 3, from the command line's side).

``tests/fixtures/user_law.py`` declares a new law, ``homogeneity`` (``@contract`` with both tiers'
options), and two operators claiming it: ``user_double`` obeys it, ``user_square`` claims it wrongly.
``check --operators thatmodule`` and ``prove --operators thatmodule`` collect the module's contracts
into a fresh catalogue (the global one untouched) that the registry carries to every tier: the fuzz
tier judges the law and refutes the false claim with a replayable counterexample, the symbolic tier
proves it for user_double and refutes it for user_square.  Before, the module was refused at
collection ("claims unknown contract 'homogeneity'").
"""
from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from tokenlaw.fuzz.replay import replay
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import runs
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS, with_user_contracts
from tokenlaw.properties.contract import contract

FIXTURE = str(Path(__file__).resolve().parents[1] / "fixtures" / "user_law.py")


def _outcomes(doc) -> dict:
    return {r["id"]: (r["law"], r["outcome"]) for r in doc.to_json()["rows"]}


def test_check_runs_a_users_own_contract_and_refutes_the_false_claim(tmp_path):
    doc = runs.check(runs.CheckSettings(operator_modules=(FIXTURE,), contracts=("homogeneity",), dtypes=("float64",),
                                        profile="smoke", workers=1, out=str(tmp_path)))
    got = _outcomes(doc)
    law = "F(c x) = c F(x) for every real c: the operator is homogeneous of degree 1."
    assert got == {"user_double-homogeneity": (law, V.Outcome.HOLDS),
                   "user_square-homogeneity": (law, V.Outcome.UNEXPECTED)}, got
    bad = next(c.verdict for c in doc.cells if c.operator == "user_square")
    assert bad.violated and bad.discrepancy > bad.bound and bad.replay
    # the stored counterexample replays through the registry that knows the user's law
    again = replay(bad.replay, tmp_path / "replays", registry=runs.registry((FIXTURE,)))
    assert again.reproduced and again.verdict.violated, again
    assert "homogeneity" not in CONTRACTS                  # collected into a fresh catalogue, never the global one


def test_prove_proves_a_users_own_contract_and_refutes_the_false_claim(tmp_path):
    doc = runs.prove(runs.ProveSettings(operator_modules=(FIXTURE,), contracts=("homogeneity",), out=str(tmp_path)))
    rows = {r["id"]: (r["outcome"], r["cells"][0]["verdict"]["status"]) for r in doc.to_json()["rows"]}
    assert rows == {"user_double-homogeneity": (V.Outcome.PROVED, V.Status.PROVED),
                    "user_square-homogeneity": (V.Outcome.UNEXPECTED, V.Status.REFUTED)}, rows
    json.dumps(doc.to_json())                              # the report is written with the user's law


def test_an_unknown_contract_is_still_refused_naming_the_closest():
    with pytest.raises(InvalidArgument, match="--contract.*homogeneity"):
        runs.check(runs.CheckSettings(operator_modules=(FIXTURE,), contracts=("homogenity",), profile="smoke"))
    with pytest.raises(InvalidArgument, match="--contract"):      # without the module, the law is not known
        runs.check(runs.CheckSettings(operators=("oattention",), contracts=("homogeneity",), profile="smoke"))


def test_a_user_contract_named_like_a_built_in_is_refused_naming_its_file():
    @contract(exact=True)
    def silence(case):
        """A user's law that reuses a built-in's name."""
    module = types.ModuleType("clash_laws")
    silence.__module__ = module.__name__
    module.silence, module.__file__ = silence, "clash_laws.py"
    with pytest.raises(ValueError, match="contract silence declared twice"):
        with_user_contracts(module)
    assert with_user_contracts() == dict(CONTRACTS)       # no module: the catalogue itself (a copy)
