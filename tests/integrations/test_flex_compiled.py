"""``flex-compiled``: torch.compile(flex_attention) as a backend of the declare_flex operators (issue 23).

The fast tests here compile nothing (the first compile takes tens of seconds on 2 cores: docs/flex.md);
the checks that compile are ``slow``.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

from tokenlaw.integrations import flex_compiled
from tokenlaw.integrations.flex_compiled import FLEX_COMPILED
from tokenlaw.operators import flex
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import runs
from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect, default_registry
from tokenlaw.properties.plan import plan

pytestmark = pytest.mark.skipif(flex.available() is not None, reason=str(flex.available()))

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = "tests/fixtures/flex_ops.py"
FLEX_OPS = collect("tests.fixtures.flex_ops")


def known():
    """flex-compiled under its name: installed through the entry point, or registered for this test."""
    return (contextlib.nullcontext() if FLEX_COMPILED.name in backends.names()
            else backends.register(FLEX_COMPILED))


# -- fast: registration and binding, nothing compiled ------------------------------------------------------

def test_the_backend_is_registered_under_its_entry_point_name():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][backends.GROUP]
    module, attr = declared["flex-compiled"].split(":")
    assert getattr(importlib.import_module(module), attr) is FLEX_COMPILED
    assert FLEX_COMPILED.name == "flex-compiled"
    with known():
        assert "flex-compiled" in backends.names() and backends.require("flex-compiled").name == "flex-compiled"


def test_it_binds_only_flex_declared_operators_and_refuses_others_without_compiling():
    misses = flex_compiled.compiled.cache_info().misses
    builtins = default_registry()
    with known():
        rows = plan(FLEX_OPS, backend="flex-compiled")
        assert {r.operator for r in rows} == set(FLEX_OPS.names()) and not rows.left_out
        left = plan(builtins, backend="flex-compiled").left_out
    assert set(left) == set(builtins.names())
    assert "declare_flex" in left["oattention"] and "'oattention' is not one" in left["oattention"]
    op = builtins["oattention"]
    params = op.domain.draw(torch.Generator().manual_seed(0), 4)
    with pytest.raises(InvalidArgument, match=r"^op: the flex-compiled backend runs torch.compile"):
        FLEX_COMPILED.run(op, torch.randn(1, 3, 4, dtype=torch.float32), **params)
    assert flex_compiled.compiled.cache_info().misses == misses          # nothing was compiled


def test_float64_is_not_runnable_here_with_the_reason():
    assert FLEX_COMPILED.not_runnable("float32") is None
    why = FLEX_COMPILED.not_runnable("float64")
    assert why.startswith("not runnable here:") and "float64" in why


def test_a_bad_variant_names_the_argument():
    op = FLEX_OPS["causal_flex"]
    params = op.domain.draw(torch.Generator().manual_seed(0), 4)
    with pytest.raises(InvalidArgument, match="^variant: expected"):
        FLEX_COMPILED.run(op, torch.randn(1, 3, 4), variant="lse", **params)


# -- slow: the compiled kernel under the contracts ---------------------------------------------------------

def _check(backend, operator, tmp_path, contracts=None):
    """The library form of ``tokenlaw --operators tests/fixtures/flex_ops.py check --backend B --operator O
    --profile smoke`` (in-process: a backend registered for the test is not seen by a worker process)."""
    settings = runs.CheckSettings(operator_modules=(FIXTURE,), operators=(operator,), contracts=contracts,
                                  backend=backend, profile="smoke", out=str(tmp_path / backend), workers=1)
    return {r.contract: r for r in runs.check(settings).rows}


@pytest.mark.slow
def test_compiled_gives_the_eager_verdicts_on_the_causal_mask_and_fails_the_peeking_one(tmp_path):
    with known():
        eager = _check("eager", "causal_flex", tmp_path)
        compiled = _check("flex-compiled", "causal_flex", tmp_path)
        peeking = _check("flex-compiled", "peeking_flex", tmp_path, contracts=("causality", "mod_mask_respect"))
    # every row judged on both backends reads the same, but masked_row_lse, whose LSE half compiled flex
    # cannot run on CPU: not runnable there, with torch's reason, never a pass
    both = {n for n in set(eager) & set(compiled) if eager[n].cells and compiled[n].cells}
    assert {"causality", "mod_mask_respect", "block_prefix", "block_layouts", "finite"} <= both, sorted(both)
    differ = {n: (eager[n].outcome, compiled[n].outcome) for n in both if eager[n].outcome != compiled[n].outcome}
    assert set(differ) <= {"masked_row_lse"}, differ
    lse = compiled["masked_row_lse"]
    assert lse.cells and lse.outcome == V.Outcome.NOT_RUNNABLE and all("return_lse" in c.verdict.detail for c in lse.cells)
    assert not [n for n, r in compiled.items() if r.failing], {n: r.outcome for n, r in compiled.items()}
    assert compiled["causality"].outcome == V.Outcome.HOLDS and compiled["eager_agreement"].outcome == V.Outcome.HOLDS
    # the gradient cells: flex has no CPU backward, compiled or not
    if not torch.cuda.is_available():
        grads = compiled["gradient_agreement"].cells
        assert grads and all(c.verdict.status == V.Status.NOT_RUNNABLE and "no CPU backward" in c.verdict.detail
                             for c in grads), [c.verdict.detail for c in grads]
    for contract in ("causality", "mod_mask_respect"):
        assert peeking[contract].outcome == V.Outcome.UNEXPECTED, (contract, peeking[contract].outcome)
        assert any(c.verdict.counterexample for c in peeking[contract].cells)


# In a fresh process (dynamo's cache is per process: a graph an earlier test compiled would match without a
# recompile), flex-compiled allowed a single graph runs one dtype and must refuse the next two.
TIGHT = """
import json, torch
from tokenlaw.integrations.flex_compiled import FlexCompiledBackend
from tokenlaw.operators.errors import NotRunnableHere
from tokenlaw.properties.catalogue import collect
from tokenlaw.properties.runner import cast

class Tight(FlexCompiledBackend):
    name, recompile_limit = "flex-compiled-tight", 1

op = collect("tests.fixtures.flex_ops")["causal_flex"]
params = op.domain.draw(torch.Generator().manual_seed(0), 4)
x = torch.randn(1, 5, 4, dtype=torch.float64)
outcomes = []
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    try:
        Tight().run(op, x.to(dtype), **cast(params, dtype))
        outcomes.append("ran")
    except NotRunnableHere as err:
        outcomes.append(str(err))
print(json.dumps(outcomes))
"""


@pytest.mark.slow
def test_past_the_recompile_limit_it_is_not_runnable_never_silently_eager():
    done = subprocess.run([sys.executable, "-c", TIGHT], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    first, *rest = json.loads(done.stdout.strip().splitlines()[-1])
    # dynamo's own fallback past the limit would run flex eagerly and return: here the second graph is refused
    assert first == "ran" and rest and all("recompile limit (1)" in r for r in rest), (first, rest)
