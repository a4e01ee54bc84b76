"""The prover: broken operators are refuted with replaying counterexamples, x/0 never proves
anything, the coverage list is decided, and ``tokenlaw prove`` writes its report."""
from __future__ import annotations

import json

import pytest
import z3

from tokenlaw.operators import oattention as oa_module
from tokenlaw.operators import projections
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties import verdict as V
from tokenlaw.symbolic.prover import prove_cell
from tokenlaw.reports.meta import Meta

REGISTRY = default_registry()


def _core_without_rescaled_eps(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
    """OAttention with eps_den left out of the exp(-M) rescaling (the bug docs/mathematics.md#oattention warns about)."""
    s = projections.scores(xp, q, k)
    mass = p_src * (xp.ones_like(s) if mask is None else mask * xp.ones_like(s))
    active = xp.gt(mass, 0)
    floor = xp.min(s, axis=-1, keepdims=True)
    top = xp.max(xp.where(active, s, floor), axis=-1, keepdims=True)
    e = xp.exp(xp.where(active, s - top, xp.zeros_like(s))) * mass
    den = eps_den + xp.sum(e, axis=-1, keepdims=True)            # BUG: eps_den * exp(-top)
    return p_rcv * xp.div(xp.matmul(e, v), den)


def _core_unguarded(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
    """p-weighted softmax with no eps_den and no guard: a null-only row divides 0 by 0."""
    s = projections.scores(xp, q, k)
    e = xp.exp(s) * p_src * (xp.ones_like(s) if mask is None else mask * xp.ones_like(s))
    return p_rcv * xp.div(xp.matmul(e, v), xp.sum(e, axis=-1, keepdims=True))


def test_broken_oattention_is_refuted_and_replays(monkeypatch):
    monkeypatch.setattr(oa_module, "oattention_core", _core_without_rescaled_eps)
    v = prove_cell(REGISTRY["oattention"], "formula_equivalence", timeout=5)
    assert v.status == V.Status.REFUTED, v.detail
    assert v.tier == "symbolic" and v.counterexample and "x" in v.counterexample
    assert v.discrepancy > v.bound > 0          # measured on the broken eager code, float64


def test_division_by_a_possibly_zero_denominator_is_not_proved(monkeypatch):
    # With z3's own total division, 0 * (a / 0) = 0 is valid: a "proof" through x/0 freedom.
    a, b = z3.Reals("a b")
    s = z3.Solver()
    s.add(z3.Not(0 * (a / b) == 0))
    assert s.check() == z3.unsat
    # The namespace's guarded division refuses it: null_receiver of the unguarded
    # operator fails its obligation (a null-only row is 0/0), and the eager replay is NaN.
    monkeypatch.setattr(oa_module, "oattention_core", _core_unguarded)
    v = prove_cell(REGISTRY["oattention"], "null_receiver", timeout=5)
    assert v.status == V.Status.REFUTED, v.detail
    assert "denominator" in " ".join(v.counterexample["failed"])
    assert v.discrepancy != v.discrepancy or v.discrepancy == float("inf")


FAST = [
    ("offn", "zero_absorption", V.Status.PROVED), ("onorm_ln", "zero_absorption", V.Status.PROVED),
    ("onorm_rms", "zero_absorption", V.Status.PROVED), ("oinject", "zero_absorption", V.Status.PROVED),
    ("layernorm", "zero_absorption", V.Status.REFUTED), ("ffn_update", "zero_absorption", V.Status.REFUTED),
    ("sdpa", "null_receiver", V.Status.REFUTED), ("sdpa", "null_source_insertion", V.Status.REFUTED),
    ("sdpa", "empty_support", V.Status.REFUTED), ("sm_fir", "score_shift_invariance", V.Status.PROVED),
    ("pn", "score_shift_invariance", V.Status.REFUTED), ("pn_fir_tau", "tau_covariance", V.Status.PROVED),
    ("pn_fir_tau", "silence", V.Status.PROVED), ("pn_fir_c", "silence", V.Status.REFUTED),
    ("fir", "causality", V.Status.PROVED), ("fir", "linearity", V.Status.PROVED), ("fir", "dc_gain", V.Status.PROVED),
    ("oa_only_host", "closure", V.Status.REFUTED), ("ostandardize", "null_receiver", V.Status.PROVED),
    ("ostandardize", "empty_support", V.Status.PROVED), ("oattention", "empty_support", V.Status.PROVED),
]
SLOW = [
    ("oattention", "null_receiver", V.Status.PROVED), ("oattention", "null_source_insertion", V.Status.PROVED),
    ("oattention", "mask_respect", V.Status.PROVED), ("oattention", "formula_equivalence", V.Status.PROVED),
    ("ostandardize", "null_source_insertion", V.Status.PROVED), ("pn_fir_tau", "sub_simplex", V.Status.PROVED),
    ("otransformer", "closure", V.Status.PROVED),
]


@pytest.mark.parametrize("op,contract,expected", FAST, ids=[f"{o}-{c}" for o, c, _ in FAST])
def test_coverage_fast(op, contract, expected):
    v = prove_cell(REGISTRY[op], contract, timeout=5)
    assert v.status == expected, v.detail
    if expected == V.Status.REFUTED:
        assert v.discrepancy != v.discrepancy or v.discrepancy > v.bound


@pytest.mark.slow  # reason: each of these is a few seconds of nonlinear solving (tokenlaw prove runs them all)
@pytest.mark.parametrize("op,contract,expected", SLOW, ids=[f"{o}-{c}" for o, c, _ in SLOW])
def test_coverage_slow(op, contract, expected):
    v = prove_cell(REGISTRY[op], contract, timeout=5)
    assert v.status == expected, v.detail


def test_cli_prove_writes_the_report(tmp_path, capsys):
    from tokenlaw.app.cli import main

    code = main(["prove", "--operator", "fir", "--out", str(tmp_path), "--json"])
    assert code == 0
    data = json.loads((tmp_path / "proofs.json").read_text())
    cells = {r["contract"]: r["cells"][0]["verdict"] for r in data["rows"]}
    assert cells["linearity"]["status"] == "proved" and cells["linearity"]["tier"] == "symbolic"
    assert cells["permutation_equivariance"]["status"] == "refuted"
    assert "Floating point is out of scope" in (tmp_path / "proofs.md").read_text()
    assert main(["prove", "--contract", "no_such_law"]) == 2


def test_host_blocks_are_checked_on_every_state_not_prefix_outputs():
    # tabular_otransformer: OStandardize at n = 1 maps every input to 0, so blocks run on the
    # prefix's outputs would only ever see zero states.  Each block must get fresh symbolic states.
    from z3.z3util import get_vars

    from tokenlaw.symbolic.prover import build_problem, build_query

    problem = build_problem(REGISTRY["tabular_otransformer"], "closure", mode="concrete")
    assignment, premises = next(problem.sym.assignments())
    q = build_query(problem, assignment, premises)
    for b in range(2):
        block = [c for c, what in q.claims if what.startswith(f"block {b} ")]
        assert block and all(c.get_id() in q.steps for c in block)      # induction steps, not host facts
        names = {str(v) for c in block for v in get_vars(c)}
        assert any(nm.startswith(f"h{b}[") for nm in names), names
    prefix = [c for c, what in q.claims if what.startswith("prefix")]
    assert prefix and not any(c.get_id() in q.steps for c in prefix)
    assert "induction" in problem.argument.lower() or "Induction" in problem.argument


def test_new_statuses_count_and_render_honestly():
    # sampled weights: a pass, never "proved"; vacuous: undecided; not traceable: not run. Every
    # report format renders them (no outcome left out of a lookup table).
    from tokenlaw.properties.plan import Cell, Row
    from tokenlaw.reports.document import Document
    from tokenlaw.reports.formats import CONFORMANCE, PROOFS, render

    def row(op, *statuses):
        return Row(op, "null_receiver", "claims", "reason",
                   [Cell(op, "null_receiver", "symbolic", "real", V.Verdict(s, tier="symbolic")) for s in statuses])

    sampled, vacuous, untraceable = row("a", V.Status.SAMPLED), row("b", V.Status.VACUOUS), row("c", V.Status.NOT_TRACEABLE)
    assert sampled.outcome == V.Outcome.SAMPLED and not sampled.failing
    assert row("a2", V.Status.SAMPLED, V.Status.PROVED).outcome == V.Outcome.HOLDS          # never "proved" as a whole
    assert vacuous.outcome == V.Outcome.VACUOUS and not vacuous.failing
    assert untraceable.outcome == V.Outcome.NOT_TRACEABLE and not untraceable.failing
    assert V.outcome("violates", V.Verdict(V.Status.SAMPLED)) == V.Outcome.NOT_REPRODUCED
    doc = Document([sampled, vacuous, untraceable], Meta.from_json(dict(tier="symbolic", solver="z3", timeout=5, seconds=0.0)))
    for fmt in CONFORMANCE + PROOFS:
        assert render(doc, fmt)


def test_proved_queries_are_kept_in_the_run_cache_passed_down_not_in_the_module():
    from tokenlaw.symbolic import prover

    x, y = z3.Reals("x y")
    cache = prover.ProofCache()
    assert cache.tactic([x + y == y + x]) is None
    cache.add([x + y == y + x], "smt")
    assert cache.tactic([x + y == y + x]) == "smt" and cache.tactic([x == y]) is None
    op = default_registry()["presence"]
    run, other = prover.ProofCache(), prover.ProofCache()
    assert prove_cell(op, "zero_absorption", cache=run).status == V.Status.PROVED
    assert len(run) > 0 and len(other) == 0          # only the cache of the run that proved it
    assert not [n for n, v in vars(prover).items() if isinstance(v, dict) and n.startswith("_") and n != "__builtins__"]
