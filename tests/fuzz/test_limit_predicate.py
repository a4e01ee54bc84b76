"""A domain limit as a predicate with a reason (issue 47, point 9): a linear attention states its own overflow limit.

``Limit(scores=, norm2=, offset=)`` bound softmax's scores; a linear attention has none.  Its float16
limit is ``Limit(predicate=fits_float16, reason=...)`` (tests/fixtures/linear_attention_ops.py).  The
check of the fixture's two operators, the same math with and without the limit, shows what it does:
with it the float16 rows hold and count the examples set aside; without it they overflow.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from tokenlaw.app import cli
from tokenlaw.fuzz import engine
from tokenlaw.operators.errors import DeclarationError
from tokenlaw.operators.registry import Limit
from tokenlaw.orchestration import runs
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS

OPS = str(Path(__file__).resolve().parents[1] / "fixtures" / "linear_attention_ops.py")
REASON = "the feature products"


def test_a_limit_may_be_a_predicate_alone_and_is_validated():
    lim = Limit(predicate=lambda x, params: True, reason="a reason")
    assert lim.inside(torch.zeros(1, 2, 4), {}) and "(x, params)" in lim.bounds()
    with pytest.raises(DeclarationError, match="Limit.predicate: expected a function"):
        Limit(predicate=3.0, reason="a reason")
    with pytest.raises(DeclarationError, match="predicate="):
        Limit(reason="bounds nothing")
    with pytest.raises(DeclarationError, match="Limit.predicate: expected a bool"):
        Limit(predicate=lambda x, params: "yes", reason="r").inside(torch.zeros(1, 1, 1), {})

    def broken(x, params):
        return params["nope"] > 0
    with pytest.raises(DeclarationError, match=r"Limit.predicate: .*broken\(x, params\) raised KeyError"):
        Limit(predicate=broken, reason="r").inside(torch.zeros(1, 1, 1), {})


def test_the_linear_attentions_float16_rows_hold_inside_its_predicate_and_overflow_without_it(tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(["--operators", OPS, "check", "--dtype", "float16", "--contract", "finite", "--examples", "60",
                     "--workers", "1", "--database", "none", "--out", str(out)])
    assert code == 1, capsys.readouterr().err                   # the control fails, the declared one does not
    doc = json.loads((out / "conformance.json").read_text())
    rows = {r["operator"]: r for r in doc["rows"]}
    limited, control = rows["linear_causal"]["cells"][0]["verdict"], rows["linear_causal_unlimited"]["cells"][0]["verdict"]
    assert rows["linear_causal"]["outcome"] == V.Outcome.HOLDS
    assert rows["linear_causal_unlimited"]["outcome"] == V.Outcome.UNEXPECTED and "non-finite" in control["detail"]
    # the examples outside the predicate were drawn, set aside and counted, and not counted as judged
    k = limited["extra"]["outside_limit"]
    assert 0 < k < limited["examples"]
    assert limited["extra"]["judged_examples"] <= limited["examples"] - k
    assert f"{k} examples outside the declared limit (Limit.predicate), set aside" in limited["detail"]
    assert limited["extra"]["limit"]["predicate"] == "fits_float16" and REASON in limited["extra"]["limit"]["reason"]
    assert "outside_limit" not in control["extra"]
    md = (out / "conformance.md").read_text()
    assert "float16: fits_float16(x, params) (the feature products" in md      # the report's legend names it


def test_a_predicate_that_refuses_every_draw_makes_the_cell_vacuous_never_holds():
    op = runs.registry([OPS])["linear_causal"]
    nothing = Limit(predicate=lambda x, params: False, reason="refuses every draw")
    op = dataclasses.replace(op, domain=dataclasses.replace(op.domain, limits={"float16": nothing}))
    v = engine.run_cell(op, CONTRACTS["finite"], torch.float16, examples=10, seed=0, replay_dir=None)
    assert v.status == V.Status.VACUOUS and v.evidence.outside == v.examples > 0
    assert "outside the declared limit (Limit.predicate), set aside unjudged" in v.detail
