"""Canaries of the symbolic tier's soundness classes (issue 11): no tier says "proved" / "holds"
about code that breaks its law.

Each file of ``tests/canaries`` is a deliberately wrong operator with a one-line ``REASON``.
They are collected into a *fresh* registry (the default one is never touched).  The symbolic
tier must give each claimed cell a non-green status (refuted with a replaying counterexample,
unknown, vacuous, not traceable, or holds-for-sampled-weights -- never "proved"), and the fuzz
tier must not say "holds" where the eager code breaks the law.
"""
from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys

import pytest
import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.properties.catalogue import collect, default_registry
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.symbolic.prover import prove_cell

HERE = pathlib.Path(__file__).resolve().parents[1] / "canaries"
MINE = ("prefix_host", "raw_division", "python_branch", "torch_call", "drawn_weights", "vacuous_mask",
        "misguarded_division", "host_wrong_block", "host_output_shift", "host_open_last", "tensor_branch",
        "domain_rejects_negative")
# Canaries that are edits of a shipping operator (``registry(base)``, ``OPERATOR``, ``CAUGHT_BY``): the
# trace = eager check (symbolic/coverage.py) must catch each claim they break only off the traced path.
MUTATED = ("fuzz_shape_width", "fuzz_shape_batch", "fuzz_shape_length", "trace_tensor_gate",
           "trace_tiny_shape_type", "trace_tiny_isinstance", "trace_tiny_dtype", "trace_other_shape")
# A 1e-12 term on one line, behind a branch the trace and the eager code take differently (issue 43,
# class 8): the exact value check must see it; trace_other_shape only at a second traced shape.
TINY = ("trace_tiny_shape_type", "trace_tiny_isinstance", "trace_tiny_dtype", "trace_other_shape")


def _load(stem):
    spec = importlib.util.spec_from_file_location(f"tokenlaw_canary_{stem}", HERE / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MODULES = {stem: _load(stem) for stem in MINE}
REGISTRY = collect(*MODULES.values())
# the mutated canaries build on tests/canaries/_build.py: imported as the package's modules
sys.path.insert(0, str(HERE.parent))
MUTANTS = {stem: importlib.import_module(f"canaries.{stem}") for stem in MUTATED}
CELLS = [(op.name, c) for op in REGISTRY for c in op.claims if CONTRACTS[c].name not in ("gradcheck",)]


def test_every_canary_says_why():
    for stem, module in MODULES.items():
        assert isinstance(module.REASON, str) and module.REASON, stem
    assert sorted(REGISTRY.names()) == sorted(f"canary_{s}" for s in MINE)


@pytest.mark.parametrize("op,contract", CELLS, ids=[f"{o}-{c}" for o, c in CELLS])
def test_symbolic_tier_never_proves_a_canary(op, contract):
    v = prove_cell(REGISTRY[op], contract, timeout=5)
    assert v.status != V.Status.PROVED, v.detail
    assert V.outcome("claims", v) != V.Outcome.PROVED
    if v.status == V.Status.REFUTED:                      # a refutation is real: it replays on the eager code
        assert v.discrepancy != v.discrepancy or v.discrepancy > v.bound, v.detail


# What each class must get, exactly (stronger than "not proved").
EXPECTED = {
    ("canary_prefix_host", "closure"): V.Status.REFUTED,
    ("canary_prefix_host", "null_source_insertion"): V.Status.REFUTED,
    ("canary_raw_division", "empty_support"): V.Status.NOT_TRACEABLE,
    ("canary_raw_division", "null_receiver"): V.Status.NOT_TRACEABLE,
    ("canary_python_branch", "zero_absorption"): V.Status.NOT_TRACEABLE,
    ("canary_torch_call", "zero_absorption"): V.Status.NOT_TRACEABLE,
    ("canary_drawn_weights", "zero_absorption"): V.Status.REFUTED,
    ("canary_vacuous_mask", "mask_respect"): V.Status.REFUTED,
    ("canary_misguarded_division", "empty_support"): V.Status.REFUTED,
    # hosts checked before induction (issue 19): judged as a whole, or refuted on a host input
    ("canary_host_wrong_block", "closure"): V.Status.REFUTED,
    ("canary_host_wrong_block", "null_source_insertion"): V.Status.REFUTED,
    ("canary_host_output_shift", "closure"): V.Status.REFUTED,
    ("canary_host_output_shift", "null_source_insertion"): V.Status.REFUTED,
    ("canary_host_open_last", "closure"): V.Status.REFUTED,
    ("canary_host_open_last", "null_source_insertion"): V.Status.REFUTED,
    ("canary_tensor_branch", "zero_absorption"): V.Status.TRACE_DIFFERS,
    ("canary_domain_rejects_negative", "zero_absorption"): V.Status.DOMAIN_MISMATCH,
}


@pytest.mark.parametrize("cell", sorted(EXPECTED), ids=["-".join(c) for c in sorted(EXPECTED)])
def test_symbolic_status_of_each_class(cell):
    v = prove_cell(REGISTRY[cell[0]], cell[1], timeout=5)
    assert v.status == EXPECTED[cell], v.detail
    if v.status == V.Status.NOT_TRACEABLE:                # names the operator's own line
        assert f"canaries/{cell[0].removeprefix('canary_')}.py:" in v.detail, v.detail


def test_a_type_branch_names_its_eager_only_line():
    v = prove_cell(REGISTRY["canary_tensor_branch"], "zero_absorption", timeout=5)
    assert v.status == V.Status.TRACE_DIFFERS and V.outcome("claims", v) == V.Outcome.TRACE_DIFFERS, v.detail
    assert "canaries/tensor_branch.py:" in v.evidence.where and "eager only" in v.detail, v.detail
    assert V.Outcome.TRACE_DIFFERS not in V.FAILING and v.evidence.solver_said == V.Status.PROVED


def test_a_counterexample_the_code_rejects_is_a_domain_mismatch():
    v = prove_cell(REGISTRY["canary_domain_rejects_negative"], "zero_absorption", timeout=5)
    assert v.status == V.Status.DOMAIN_MISMATCH and V.outcome("claims", v) in V.FAILING, v.detail
    rejected = v.evidence.rejected
    assert rejected["argument"] == "tau" and rejected["value"] < 0, rejected
    assert "tau = -" in v.detail and "wider than the code accepts" in v.detail, v.detail


MUTANT_CELLS = [(stem, c) for stem in MUTATED for c in MUTANTS[stem].CAUGHT_BY]


@pytest.mark.parametrize("stem,contract", MUTANT_CELLS, ids=[f"{s}-{c}" for s, c in MUTANT_CELLS])
def test_a_path_the_trace_never_took_is_trace_differs(stem, contract):
    # Wrong only at shapes the trace never reaches (d in {5, 7}, batch >= 3, 7 <= n <= 12), or only
    # for real tensors on one line (values differ): the solver proves the trace, the check says no.
    module = MUTANTS[stem]
    op = module.registry(default_registry())[module.OPERATOR]
    v = prove_cell(op, contract, timeout=5)
    assert v.status == V.Status.TRACE_DIFFERS, v.detail
    assert v.evidence.solver_said in (V.Status.PROVED, V.Status.SAMPLED), v.extra
    if getattr(module, "SHAPE", None):             # the swept shape that takes the other path is named
        bad = {"d": "d=5", "n": "n=7", "batch": "batch=3"}[module.SHAPE]
        assert bad in v.detail and "oattention.py (mutated copy):" in v.evidence.where, v.detail
    elif stem == "trace_other_shape":              # equal at n = 2; the law fails at the second trace at n = 3
        assert "at n=3" in v.detail and "the law fails on the eager code" in v.detail, v.detail
    elif stem in TINY:                             # an exact zero traced: the eager 1e-12 is not bit-for-bit equal
        assert "traced value differs from the eager float64 value" in v.detail and "> 0," in v.detail, v.detail
    else:
        assert "traced value differs from the eager float64 value" in v.detail, v.detail


def test_the_shipping_operator_stays_proved_and_tied():
    # The control of the canaries above: the same claims on the shipping OAttention.
    op = default_registry()["oattention"]
    for contract in ("null_receiver", "empty_support"):
        v = prove_cell(op, contract, timeout=5)
        assert v.status == V.Status.PROVED, v.detail
        assert v.evidence.trace_check.startswith("trace = eager"), v.extra


def test_prefix_host_induction_checks_blocks_on_every_state():
    # Eagerly the composed host is not closed: [1] ends at 1.0, [1, null] at 0.0.
    op = REGISTRY["canary_prefix_host"]
    from tokenlaw.operators.xp import TORCH
    p = op.domain.params(torch.Generator(), 1)
    one = op.fn(TORCH, torch.ones(1, 1, 1, dtype=torch.float64), None, **p)
    two = op.fn(TORCH, torch.tensor([[[1.0], [0.0]]], dtype=torch.float64), None, **p)
    assert float(one[0, 0, 0]) == 1.0 and float(two[0, 0, 0]) == 0.0
    v = prove_cell(op, "closure", timeout=5)
    assert v.status == V.Status.REFUTED and "not proved" in v.detail      # the induction failed first, then the host


def test_sampled_weights_are_never_proved():
    v = prove_cell(REGISTRY["canary_drawn_weights"], "zero_absorption", timeout=5, mode="concrete")
    assert v.status == V.Status.SAMPLED, v.detail
    assert V.outcome("claims", v) == V.Outcome.SAMPLED and V.Outcome.SAMPLED not in V.FAILING


def test_zero_feasible_queries_is_vacuous():
    v = prove_cell(REGISTRY["canary_vacuous_mask"], "mask_respect", timeout=5, n=1)
    assert v.status == V.Status.VACUOUS, v.detail
    assert V.outcome("claims", v) == V.Outcome.VACUOUS


def test_an_untraceable_row_does_not_abort_the_run(tmp_path):
    from tokenlaw.properties.plan import plan, proved
    from tokenlaw.reports import proofs as report
    from tokenlaw.symbolic.prover import prove_rows

    rows = plan(REGISTRY, operators=["canary_torch_call", "canary_drawn_weights"], dtypes=["float64"])
    done = proved(rows, prove_rows(REGISTRY, rows, timeout=5))
    from tokenlaw.reports import formats
    from tokenlaw.reports.meta import Meta
    paths = formats.write(report.document(done, Meta.from_json(dict(tier="symbolic", solver="z3", timeout=5, seconds=0.0))), tmp_path,
                          formats.PROOFS, stem="proofs")
    text = paths["proofs-md"].read_text()
    assert "not symbolically traceable" in text and "torch_call.py:" in text
    assert "refuted" in text                       # the other row still ran


# The fuzz tier on the canaries whose eager code breaks the law (torch_call is correct eagerly;
# drawn_weights breaks it only for weights the domain never draws; host_output_shift's layers are
# closed and only its op.fn breaks null insertion, which closure judges as the last state).
FUZZ = [("canary_prefix_host", "closure"), ("canary_prefix_host", "null_source_insertion"),
        ("canary_raw_division", "empty_support"), ("canary_python_branch", "zero_absorption"),
        ("canary_vacuous_mask", "mask_respect"), ("canary_misguarded_division", "empty_support"),
        ("canary_host_wrong_block", "closure"), ("canary_host_wrong_block", "null_source_insertion"),
        ("canary_host_output_shift", "closure"), ("canary_host_output_shift", "null_source_insertion"),
        ("canary_host_open_last", "closure"), ("canary_host_open_last", "null_source_insertion"),
        ("canary_tensor_branch", "zero_absorption")]


@pytest.mark.parametrize("stem", TINY[:3])
def test_fuzz_tier_sees_a_tiny_term_in_an_exact_law(stem):
    # The exact law (a null receiver's output is exactly 0) sees 1e-12 eagerly.  (trace_other_shape is
    # wrong only at n = 3, which 30 examples need not draw: the fuzz tier's length draws are its own issue.)
    module = MUTANTS[stem]
    op = module.registry(default_registry())[module.OPERATOR]
    v = run_cell(op, CONTRACTS["null_receiver"], torch.float64, examples=30, seed=0, replay_dir=None)
    assert v.status != V.Status.HOLDS and v.violated, v.detail


@pytest.mark.parametrize("op,contract", FUZZ, ids=[f"{o}-{c}" for o, c in FUZZ])
def test_fuzz_tier_does_not_say_holds(op, contract):
    v = run_cell(REGISTRY[op], CONTRACTS[contract], torch.float64, examples=30, seed=0, replay_dir=None)
    assert v.status != V.Status.HOLDS and v.violated, v.detail


def test_a_where_guarded_division_is_proved_not_flagged():
    # The control: the same pooling as the raw-division canary, divided under where(den > 0, ., 0).
    control = collect(_load("guarded_division"))["control_guarded_division"]
    for contract in ("empty_support", "null_receiver"):
        v = prove_cell(control, contract, timeout=5)
        assert v.status == V.Status.PROVED, v.detail
