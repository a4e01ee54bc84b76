"""A contract is one declaration (issue 20, point 3): a law added in one place runs on both tiers.

``tests/fixtures/user_law.py`` declares ``homogeneity`` once -- its statement over ``xp`` and its
``@contract(symbolic=SymbolicOptions(...))`` -- plus two operators claiming it.  Nothing in tokenlaw
names it: the fuzz tier judges its cells and the symbolic tier instantiates its statement generically.
The attack: ``user_square`` claims it wrongly, and both tiers must refute that claim.
"""
from __future__ import annotations

import ast
import re
import dataclasses
import importlib.util
import types
from pathlib import Path

import pytest
import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.operators import registry
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import statement as S
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS, collect_contracts, laws_modules
from tokenlaw.properties.contract import FuzzOptions, SymbolicOptions, contract
from tokenlaw.symbolic import laws as L
from tokenlaw.symbolic.prover import build_problem, build_query, prove_cell

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "user_law.py"


def _load():
    spec = importlib.util.spec_from_file_location("user_law_fixture", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


USER = _load()
LAWS = {**CONTRACTS, **collect_contracts(USER)}
REG = registry.collect(USER, contracts=LAWS)
LAW = LAWS["homogeneity"]


def test_the_new_law_is_collected_from_its_one_declaration():
    assert "homogeneity" not in CONTRACTS and LAW.law.startswith("F(c x) = c F(x)")
    assert LAW.symbolic.statement is USER.scaled and set(REG.names()) == {"user_double", "user_square"}


def test_the_fuzz_tier_judges_the_new_law_and_refutes_the_false_claim():
    good = run_cell(REG["user_double"], LAW, torch.float64, examples=20, seed=0, replay_dir=None)
    bad = run_cell(REG["user_square"], LAW, torch.float64, examples=20, seed=0, replay_dir=None)
    # the 20 examples of the seeded search, then examples of their own in each length band it never drew
    # and at each block edge (strategies.banded_find): every band and every edge is drawn
    assert good.status == V.Status.HOLDS and good.examples > 20, good.detail
    drawn_n = re.search(r"drawn n ([^;]*);", good.evidence.notes).group(1)
    assert ":0 " not in drawn_n + " ", good.detail
    assert all(f" {e}:" in " " + drawn_n for e in (64, 65, 128, 129, 256, 257)), good.detail
    assert bad.status == V.Status.VIOLATED and bad.discrepancy > bad.bound and bad.counterexample, bad.detail
    assert V.outcome("claims", good) == V.Outcome.HOLDS and V.outcome("claims", bad) == V.Outcome.UNEXPECTED


def test_the_symbolic_tier_proves_the_new_law_and_refutes_the_false_claim():
    proved = prove_cell(REG["user_double"], LAW)
    refuted = prove_cell(REG["user_square"], LAW)
    assert proved.status == V.Status.PROVED, proved.detail
    assert proved.evidence.statement == "F(c x) = c F(x) for every real c, 2 tokens", proved.extra
    assert refuted.status == V.Status.REFUTED and refuted.discrepancy > refuted.bound, refuted.detail
    ce = refuted.counterexample
    assert set(ce) >= {"x", "c"} and ce["failed"], ce
    # the model, replayed by hand on the eager code: (c x)^2 != c x^2 unless c in {0, 1} or x = 0
    x, c = torch.tensor(ce["x"], dtype=torch.float64), float(ce["c"])
    assert float(((c * x) ** 2 - c * x ** 2).abs().max()) > 0.0
    assert V.outcome("claims", proved) == V.Outcome.PROVED and V.outcome("claims", refuted) == V.Outcome.UNEXPECTED


def test_every_position_of_a_declared_statement_is_instantiated():
    """null_receiver's one declaration gives facts at every token on the symbolic tier (the fuzz tier: one drawn)."""
    op = registry.collect("tokenlaw.operators", contracts=CONTRACTS)["oattention"]
    problem = build_problem(op, "null_receiver")
    assert problem.statement == "for every i < 2: h_i = 0 => out_i = 0"
    whats = {what.split(" at (")[0] for _, what in build_query(problem).claims}
    assert whats == {"output at null tokens [0]", "output at null tokens [1]"}, whats


def test_laws_modules_are_discovered_not_listed():
    found = laws_modules()
    assert "tokenlaw.properties.null_laws" in found and all(m.endswith("_laws") for m in found)
    assert found[0] == "tokenlaw.properties.null_laws"           # ORDER keeps the catalogue's listing order
    assert set(CONTRACTS) == set(collect_contracts(*found))


def _law(**symbolic):
    @contract(exact=False, symbolic=SymbolicOptions(**symbolic))
    def probe(case):
        """A probe."""
    module = types.ModuleType(probe.__module__)
    module.probe, module.__file__ = probe, __file__
    return collect_contracts(module)["probe"]


def test_a_statement_with_an_argument_nothing_provides_is_refused_naming_it():
    def needs_z(xp, run, x, mask, z):
        return [S.equal(run(x, mask), z, "x vs z")]

    law = _law(shape=(2, 1), statement=needs_z, says=lambda at: "F(x) = z")
    with pytest.raises(InvalidArgument, match="'z'.*no input, position or parameter of user_double"):
        L.build(REG["user_double"], law, 2, 1, "symbolic")
    v = prove_cell(REG["user_double"], law)
    assert v.status == V.Status.NOT_RUNNABLE and "'z'" in v.detail, v.detail


def test_contradictory_or_incomplete_symbolic_options_are_refused():
    with pytest.raises(ValueError, match="shape"):
        SymbolicOptions(statement=USER.scaled, says=lambda at: "")
    with pytest.raises(ValueError, match="says"):
        SymbolicOptions(shape=(2, 1), statement=USER.scaled)
    with pytest.raises(ValueError, match="none="):
        SymbolicOptions(shape=(2, 1), none="why", host="closure_induction")
    with pytest.raises(ValueError, match="kinds"):
        SymbolicOptions(shape=(2, 1), inputs=(("c", "matrix"),))
    with pytest.raises(ValueError, match="FuzzOptions"):
        contract(exact=True, fuzz=dict(near_null=False))
    assert FuzzOptions(b=1, a=2).bounds == (("a", 2), ("b", 1))


def test_an_unknown_host_strategy_is_refused_naming_it():
    host = REG["user_double"]
    law = _law(shape=(1, 1), host="no_such_strategy")
    fake = dataclasses.replace(host, layers=lambda xp, x, mask=None: [x])
    with pytest.raises(InvalidArgument, match="no_such_strategy"):
        L.build(fake, law, 1, 1, "symbolic")


def test_a_law_without_a_symbolic_declaration_says_so():
    v = prove_cell(REG["user_double"], _law())
    assert v.status == V.Status.NOT_RUNNABLE and v.detail == "no symbolic law for probe", v.detail


ROOT = Path(__file__).resolve().parents[2]
TIERS = ("fuzz", "symbolic", "kernels")
# a string that happens to spell a contract's name but means something else there
NOT_A_CONTRACT = {("symbolic/laws.py", "finite"): "Claim.kind 'finite' (statement.finite), not the contract"}


def _named_contracts(path: Path, source: str) -> list:
    """(line, name) of every string constant in ``source`` that is a contract's name."""
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CONTRACTS
            and (rel, node.value) not in NOT_A_CONTRACT]


def test_no_tier_names_a_contract():
    """What a tier needs about a contract is an option of the contract, never a branch on its name."""
    found = {p.relative_to(ROOT).as_posix(): hits for tier in TIERS for p in sorted((ROOT / tier).glob("*.py"))
             if (hits := _named_contracts(p, p.read_text()))}
    assert found == {}, found


def test_the_name_check_can_fail():
    """The attack: a tier that special-cases a contract by name, as prover.py once did, is caught."""
    bad = 'def prove(contract):\n    if contract == "null_source_insertion":\n        return "via closure"\n'
    assert _named_contracts(ROOT / "symbolic" / "prover.py", bad) == [(2, "null_source_insertion")]
    assert _named_contracts(ROOT / "symbolic" / "laws.py", 'kind = "finite"') == []


def test_a_plugin_registers_its_laws_module_like_its_operators(monkeypatch):
    """An installed plug-in's contracts come from the ``tokenlaw.contracts`` entry-point group."""
    import sys
    from importlib.metadata import EntryPoint

    from tokenlaw.properties import catalogue

    monkeypatch.setitem(sys.modules, "user_law_fixture", USER)
    fake = [EntryPoint(name="demo", value="user_law_fixture", group=catalogue.ENTRY_POINTS)]
    monkeypatch.setattr(catalogue, "entry_points", lambda group: fake if group == catalogue.ENTRY_POINTS else [])
    assert catalogue.contract_modules()[-1] == "user_law_fixture"
    found = collect_contracts()
    assert "homogeneity" in found and set(CONTRACTS) < set(found)
