"""A contract reads an operator's parameters by the part they play, never by name (issue 20, point 5).

``tests/fixtures/renamed_ops.py`` declares renamed copies of two built-ins -- ``pn_fir_theta``
(pn_fir_tau's threshold called ``theta``) and ``oattention_renamed`` (every projection, the head count,
tau and eps_den renamed) -- with ``Domain(roles=Roles(...))`` saying which parameter is which.  Every
contract that used to look a parameter up by name (the score laws' tau, the softmax limit's tau and
eps_den and projections, the formula's eps_den, the symbolic statements' tau) must give the copy the
verdict it gives the built-in, bit for bit; and no module of ``properties/`` spells a parameter name.
On the code before the roles this failed: tau_covariance, silence and gate_below_one saw no
threshold on pn_fir_theta (``weights(tau=...)`` raised, tau read as 0).
"""
from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

import pytest
import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.fuzz.strategies import EDGES, FILL, reachable_bands
from tokenlaw.operators import tree
from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.operators.roles import Roles
from tokenlaw.properties.catalogue import CONTRACTS, collect, default_registry
from tokenlaw.properties.plan import plan
from tokenlaw.symbolic.prover import build_problem, build_query, prove_cell

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import renamed_ops as U  # noqa: E402  (the fixture folder is put on the path just above)

REG, BASE = collect(U), default_registry()
EXAMPLES = 5


def _rows(reg, name):
    return [(r.contract, r.declared, [c.dtype for c in r.cells]) for r in plan(reg, operators=[name])]


def _same(new, old):
    """What a verdict found (its status, measures, wording and counts); the counterexample's parameter
    names differ by construction, so it is compared by its tokens only."""
    def key(v):
        ce = v.counterexample or {}
        return (v.status, v.discrepancy, v.bound, v.detail, v.examples, v.inconclusive, ce.get("x"))
    return key(new) == key(old), (key(new), key(old))


def _ran_the_budget(v, contract, examples):
    """``v`` ran the whole seeded search (``examples``), plus at most FILL examples in each reachable length
    band the search missed and at each explicit edge (strategies.banded_find), and drew every reachable band."""
    bands = () if contract.fuzz_bounds.get("core") else reachable_bands(**contract.fuzz_bounds)
    assert examples <= v.examples <= examples + FILL * (len(bands) + len(EDGES)), (v.examples, bands)
    drawn = (v.evidence.drawn if v.evidence is not None else {}).get("n", {})
    assert [b for b in bands if not drawn.get(b)] == [], drawn


def test_the_copies_plan_the_built_ins_rows():
    for new, old in U.BUILT_IN.items():
        assert _rows(REG, new) == _rows(BASE, old), new


# the cells whose law used to name a parameter: (copy, contract, dtype)
FUZZ = [("pn_fir_theta", "tau_covariance", "float32"), ("pn_fir_theta", "silence", "float64"),
        ("pn_fir_theta", "gate_below_one", "float64"), ("oattention_renamed", "softmax_reduction", "float64"),
        ("oattention_renamed", "formula_equivalence", "float64")]


@pytest.mark.parametrize("new,contract,dtype", FUZZ, ids=[f"{n}-{c}-{d}" for n, c, d in FUZZ])
def test_a_renamed_copy_gets_the_built_ins_fuzz_verdict(new, contract, dtype):
    got = run_cell(REG[new], CONTRACTS[contract], DTYPES[dtype], examples=EXAMPLES, seed=0, replay_dir=None)
    want = run_cell(BASE[U.BUILT_IN[new]], CONTRACTS[contract], DTYPES[dtype], examples=EXAMPLES, seed=0,
                    replay_dir=None)
    same, keys = _same(got, want)
    assert same, keys
    _ran_the_budget(got, CONTRACTS[contract], EXAMPLES)


@pytest.mark.parametrize("contract", ["tau_covariance", "silence"])
def test_a_renamed_copy_gets_the_built_ins_symbolic_statement(contract):
    """The statement is instantiated alike: the same law in words, the same premises and facts (not solved
    here: that is the slow test below)."""
    got, want = build_problem(REG["pn_fir_theta"], contract), build_problem(BASE["pn_fir_tau"], contract)
    assert got.statement == want.statement and got.shapes == want.shapes
    assert [why for _, why in got.sym.premises] == [why for _, why in want.sym.premises]

    def claims(problem):          # the z3 claims, the threshold's symbol under the built-in's name
        return [(str(c).replace("theta", "tau"), what) for c, what in build_query(problem).claims]
    assert claims(got) == claims(want) != []


@pytest.mark.slow
@pytest.mark.parametrize("contract", ["tau_covariance", "silence"])
def test_a_renamed_copy_gets_the_built_ins_proof(contract):
    got, want = prove_cell(REG["pn_fir_theta"], contract), prove_cell(BASE["pn_fir_tau"], contract)
    assert got.status == want.status and got.evidence.statement == want.evidence.statement, \
        (got.status, got.detail, want.status, want.detail)


def test_without_its_roles_the_copy_is_misjudged():
    """The attack: the same copy declaring the default roles (its threshold is then 'not there')."""
    op = dataclasses.replace(REG["pn_fir_theta"],
                             domain=dataclasses.replace(REG["pn_fir_theta"].domain, roles=Roles()))
    got = run_cell(op, CONTRACTS["tau_covariance"], DTYPES["float32"], examples=EXAMPLES, seed=0, replay_dir=None)
    want = run_cell(BASE["pn_fir_tau"], CONTRACTS["tau_covariance"], DTYPES["float32"], examples=EXAMPLES, seed=0,
                    replay_dir=None)
    assert not _same(got, want)[0], got.detail


@pytest.mark.slow
@pytest.mark.parametrize("new", sorted(U.BUILT_IN))
def test_every_cell_of_a_renamed_copy_matches_the_built_in(new):
    for contract, _, dtypes in _rows(BASE, U.BUILT_IN[new]):
        for dtype in dtypes:
            got = run_cell(REG[new], CONTRACTS[contract], DTYPES[dtype], examples=EXAMPLES, seed=0, replay_dir=None)
            want = run_cell(BASE[U.BUILT_IN[new]], CONTRACTS[contract], DTYPES[dtype], examples=EXAMPLES, seed=0,
                            replay_dir=None)
            same, keys = _same(got, want)
            assert same, (contract, dtype, keys)


# -- no parameter names in properties/ ------------------------------------------------------

# string constants that spell a parameter's name but mean something else there
NOT_A_PARAMETER = {("filter_laws.py", "b"): "linearity's symbolic scalar input b (SymbolicOptions.inputs)"}


def _parameter_names() -> set:
    """Every key of every built-in operator's drawn parameter tree, and every name the default roles hold."""
    names = set()
    for op in BASE:
        names |= {k for k in tree.keys(op.domain.draw(torch.Generator().manual_seed(0), op.domain.d_model[0]))
                  if isinstance(k, str)}
    for f in dataclasses.fields(Roles):
        value = getattr(Roles(), f.name)
        names |= {value} if isinstance(value, str) else {v for _, v in tree.leaves(value) if isinstance(v, str)}
    return names


def named_parameters(path: Path, names: set) -> list:
    """(line, name) of every string constant of ``path`` that is a parameter's name."""
    source = ast.parse(path.read_text())
    return [(n.lineno, n.value) for n in ast.walk(source)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names
            and (path.name, n.value) not in NOT_A_PARAMETER]


def test_no_module_of_properties_names_a_parameter():
    names = _parameter_names()
    assert {"tau", "eps_den", "bq", "heads", "wq", "taps", "wo", "gamma"} <= names   # the scan knows them
    found = {p.name: hits for p in sorted((ROOT / "properties").glob("*.py")) if (hits := named_parameters(p, names))}
    assert not found, found


def test_the_scan_finds_a_parameter_named_in_a_law(tmp_path):
    """The attack: a law that reads case.params["tau"] is caught, as a key or in a call."""
    bad = tmp_path / "bad_laws.py"
    bad.write_text('def law(case):\n    return case.params["tau"] + case.params.get("eps_den", 0)\n')
    assert named_parameters(bad, _parameter_names()) == [(2, "tau"), (2, "eps_den")]
