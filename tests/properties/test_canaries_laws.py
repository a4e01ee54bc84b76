"""Canaries (issue 11 point 11): deliberately wrong operators no tier may call green.

Each file under tests/canaries/ declares one operator and a one-line
``REASON``; it is collected into a FRESH registry (the default one is never
touched).  For every contract it claims, the symbolic tier must not say
"proved" and the fuzz tier must not say "holds" (in float64 and float16).
A file with ``CONTROL = True`` is the opposite check: a correct operator
next to a canary, which both tiers must pass (so the canary fails for its
defect, not for the harness).

Classes covered here: parameter domains guessed from error messages
(domain_*) and a body that differs from its declared ``weights=`` (weights_*).
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest
import torch

from tokenlaw.properties.catalogue import collect
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS

HERE = pathlib.Path(__file__).resolve().parents[1] / "canaries"
PREFIXES = ("domain_", "weights_")
FILES = sorted(p for p in HERE.glob("*.py") if p.name.startswith(PREFIXES))
GREEN = {V.Status.PROVED, V.Status.HOLDS}
NO_SYMBOLIC = {"gradcheck"}            # concrete-only contracts: the fuzz tier alone judges them


def load(path: pathlib.Path):
    name = f"tokenlaw_canary_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cells():
    for path in FILES:
        module = load(path)
        (op,) = list(collect(module))
        for contract in op.claims:
            yield pytest.param(path, module, op, contract, id=f"{path.stem}-{contract}")


def test_every_canary_file_has_a_one_line_reason():
    assert FILES, "no canaries found"
    for path in FILES:
        reason = getattr(load(path), "REASON", "")
        assert isinstance(reason, str) and reason.strip() and "\n" not in reason, path.name


@pytest.mark.parametrize("path, module, op, contract", list(cells()))
def test_no_tier_calls_a_canary_green(path, module, op, contract):
    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.symbolic.prover import prove_cell

    control = getattr(module, "CONTROL", False)
    verdicts = {}
    if contract not in NO_SYMBOLIC:
        verdicts["symbolic"] = prove_cell(op, contract)
    for dtype in (torch.float64, torch.float16):
        verdicts[str(dtype)] = run_cell(op, CONTRACTS[contract], dtype, examples=30, seed=0, replay_dir=None)
    for tier, v in verdicts.items():
        if control:
            assert v.status in GREEN, (path.name, tier, v.status, v.detail)
        else:
            assert v.status not in GREEN, (path.name, tier, v.status, v.detail)
        # a refutation is a counterexample that replayed on the eager code, never a mismatch
        assert not v.mismatch, (path.name, tier, v.detail)


def test_a_domain_counterexample_lies_in_the_declared_domain():
    """The prover's premises are the declaration: tau >= 0 here, so the refuting tau is >= 0
    (before, no premise was guessed, z3 could pick tau < 0 and the replay raised)."""
    from tokenlaw.symbolic.prover import prove_cell

    (op,) = list(collect(load(HERE / "domain_accepts_zero.py")))
    v = prove_cell(op, "zero_absorption")
    assert v.status == V.Status.REFUTED, v.detail
    assert 0.0 <= v.counterexample["params"]["tau"] < 1e-3


def test_declared_all_reals_is_refuted_where_the_guess_proved():
    from tokenlaw.symbolic.prover import prove_cell

    (op,) = list(collect(load(HERE / "domain_rejects_zero_reals.py")))
    v = prove_cell(op, "zero_absorption")
    assert v.status == V.Status.REFUTED and v.counterexample["params"]["tau"] < 0, v.detail
    assert "tau real" in " ".join(v.evidence.premises) or not v.evidence.premises
