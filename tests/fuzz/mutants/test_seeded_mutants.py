"""Mutation testing: the catalogue, its patches, and the suite killing the mutants."""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys

import pytest
import torch

import tokenlaw.operators
from tokenlaw.app.fuzz_cmd import mutant_catalogue
from tokenlaw.fuzz.mutants.seeded import EAGER_MUTANTS, catalogue
from tokenlaw.fuzz.mutants.mutate import run_mutant, run_mutants
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.mutants import Mutant

REG = default_registry()
# one cheap mutant per family; the whole catalogue is the slow test below
FAST = ("offn_bias_outside_gate", "ostd_empty_support_unguarded", "gate_reaches_one", "oattn_receiver_gate_dropped")


def test_catalogue_has_at_least_12_mutants_spread_over_the_families():
    assert len(EAGER_MUTANTS) >= 12
    assert len({m.name for m in EAGER_MUTANTS}) == len(EAGER_MUTANTS)
    ops = {o for m in EAGER_MUTANTS for o in m.operators}
    for family in ("oattention", "offn", "onorm_ln", "oinject", "ostandardize", "fir", "pn", "pn_fir_c", "pn_fir_tau"):
        assert family in ops, family
    for m in EAGER_MUTANTS:
        assert isinstance(m, Mutant) and m.backend == "eager" and m.description
        assert all(o in REG for o in m.operators), m.operators


def test_catalogue_filters_by_backend():
    assert catalogue(backend="eager") == EAGER_MUTANTS and catalogue(backend="triton") == ()
    everything = mutant_catalogue()
    assert everything[:len(EAGER_MUTANTS)] == EAGER_MUTANTS
    assert all(isinstance(m, Mutant) for m in everything)                 # one type for eager and kernel mutants
    assert all(m.backend == "triton" for m in mutant_catalogue(backend="triton"))
    assert mutant_catalogue(backend="eager") == EAGER_MUTANTS


def test_the_eager_catalogue_does_not_import_the_kernels():
    """fuzz/ and kernels/ are peers: the app gathers both catalogues."""
    import ast
    import inspect

    import tokenlaw.fuzz.mutants.seeded as M
    import tokenlaw.fuzz.mutants.source_edit as S

    for module in (M, S):
        names = [n.module or "" for n in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(n, ast.Import)
                  for a in n.names]
        assert not [n for n in names if "kernels" in n], module.__name__


def _state():
    """Every module attribute and spec hook a mutant could touch, by identity."""
    out = {}
    for mod in ("oattention", "ostandardize", "norms", "ffn", "oinject", "presence", "fir", "fir_attention", "normalisers"):
        m = importlib.import_module("tokenlaw.operators." + mod)
        out.update({(mod, k): id(v) for k, v in vars(m).items() if callable(v)})
    for spec in REG:
        out.update({(spec.name, h): id(getattr(spec, h)) for h in ("fn", "weights", "layers", "reference")})
    return out


@pytest.mark.parametrize("mutant", EAGER_MUTANTS, ids=[m.name for m in EAGER_MUTANTS])
def test_mutant_is_a_registry_copy_of_the_shipping_code(mutant):
    """apply() edits the shipping source into a new registry; the default registry and modules are untouched."""
    before = _state()
    bad = mutant.apply(REG)
    assert bad is not REG
    for name in mutant.operators:
        assert bad[name].fn is not REG[name].fn, name
        assert bad[name].source == REG[name].source        # the same module's code, edited
    assert _state() == before


def test_a_stale_snippet_fails_loudly():
    first = EAGER_MUTANTS[0]
    stale = dataclasses.replace(first, mutate=dataclasses.replace(first.mutate, edits=(("this line is not in the module", "x"),)))
    with pytest.raises(InvalidArgument, match="occurs 0 times"):
        stale.apply(REG)


def _shared_state():
    """Everything a mutant must leave alone, by identity: the default registry (its specs and every field of
    each), every attribute of every tokenlaw.operators module, and which tokenlaw modules are imported."""
    reg = default_registry()
    out = {("registry", "object"): id(reg), ("registry", "names"): tuple(s.name for s in reg)}
    for spec in reg:
        out[("spec", spec.name)] = id(spec)
        out.update({(spec.name, f.name): id(getattr(spec, f.name)) for f in dataclasses.fields(spec)})
    for info in pkgutil.iter_modules(tokenlaw.operators.__path__):
        mod = importlib.import_module(f"tokenlaw.operators.{info.name}")
        out.update({(info.name, k): id(v) for k, v in vars(mod).items()})
    out[("sys.modules", "tokenlaw")] = tuple(sorted(m for m in sys.modules if m.startswith("tokenlaw.operators")))
    return out


def test_running_every_eager_mutant_leaves_the_default_registry_and_operator_modules_unchanged():
    before = _shared_state()
    reg = default_registry()
    from tokenlaw.fuzz.rows import run_rows
    from tokenlaw.properties.plan import plan

    for m in EAGER_MUTANTS:            # what a run does (apply, plan, judge), on one row of each at 1 example
        bad = m.apply(reg)
        rows = [r for r in plan(bad, operators=[m.operators[0]]) if r.cells][:1]
        run_rows(bad, rows, examples=1, seed=0, replay_dir=None, progress=False)
        assert rows and all(c.verdict is not None for c in rows[0].cells)
    assert _shared_state() == before
    assert reg is default_registry()


def test_the_shared_state_check_sees_a_mutant_that_patches_the_default_registry():
    """Attack: a mutant written the old way (object.__setattr__ on the shared spec) is caught by the check."""
    reg = default_registry()
    spec = reg["presence"]
    original = spec.fn
    bad = EAGER_MUTANTS[[m.name for m in EAGER_MUTANTS].index("presence_floor")].apply(reg)["presence"].fn

    def patch_shared(registry):
        object.__setattr__(registry["presence"], "fn", bad)
        return registry

    before = _shared_state()
    try:
        Mutant("patches_shared_state", ("presence",), "the old way", mutate=patch_shared).apply(reg)
        assert _shared_state() != before
    finally:
        object.__setattr__(spec, "fn", original)
    assert _shared_state() == before


@pytest.mark.parametrize("name", FAST)
def test_fast_subset_is_killed(name):
    m = next(m for m in EAGER_MUTANTS if m.name == name)
    res = run_mutant(REG, m, examples=8, seed=0)
    assert res.killed, f"{name} survived: the suite has a gap"
    assert all(k.split("-")[0] in m.operators for k in res.killers)


@pytest.mark.slow   # ~20 s: every oattention row at 40 examples per dtype
def test_running_max_over_nulls_needs_large_magnitudes():
    """The underflow mutant is invisible at unit scale: only the edge strategies expose it."""
    m = next(m for m in EAGER_MUTANTS if m.name == "oattn_running_max_over_nulls")
    res = run_mutant(REG, m, examples=40, seed=0)
    assert res.killed, res


@pytest.mark.slow   # ~5 min on 2 shared cores: every mutant against every declared cell of its operators
def test_mutate_kills_the_whole_catalogue():
    results, baseline = run_mutants(REG, EAGER_MUTANTS, examples=30, seed=0, stream=None)
    survivors = [r.name for r in results if not r.killed]
    assert not survivors, survivors


# The new FIR-family, presence and declaration mutants, each with the row that must kill it
# (the law it breaks: the independent reference, the DC gain's taps of docs/mathematics.md#fir, silence).
KILLED_BY = {
    "causal_mask_hides_diagonal": "pn-spec_reference",
    "fir_applied_to_values": "sm_fir-spec_reference",
    "fir_taps_reversed": "fir-dc_gain",
    "fir_taps_reordered": "fir-dc_gain",
    "presence_miscalibrated": "presence-spec_reference",
    "pn_tau_power_before_rectification": "pn_fir_tau-silence",
    "body_differs_from_weights": "pn_fir_tau-spec_reference",
}


@pytest.mark.parametrize("name", sorted(KILLED_BY))
def test_new_mutants_are_killed_through_the_law_they_break(name):
    from tokenlaw.fuzz.rows import run_rows
    from tokenlaw.properties.plan import plan

    m = next(m for m in EAGER_MUTANTS if m.name == name)
    op, contract = KILLED_BY[name].split("-", 1)
    bad = m.apply(REG)
    rows = plan(bad, operators=[op], contracts=[contract])
    run_rows(bad, rows, examples=20, seed=0, replay_dir=None, progress=False)
    assert rows[0].failing, f"{name} survived {KILLED_BY[name]}"
    # the unmutated row holds: the kill is the mutant's
    clean = plan(REG, operators=[op], contracts=[contract])
    run_rows(REG, clean, examples=20, seed=0, replay_dir=None, progress=False)
    assert not clean[0].failing
    v = next(c.verdict for c in rows[0].cells if c.verdict is not None and c.verdict.violated)
    assert "raised" not in v.detail and v.discrepancy == v.discrepancy   # the law, not a crash or a NaN


def test_log_eps_after_rounding_is_killed_at_the_combined_extremes_edge():
    """Issue 43, class 9: log(eps_den) taken after eps_den is rounded to float16 needs float16, the smallest
    eps_den and scores at log(eps_den) together.  The explicit edge (strategies.EXTREMES) puts them in one
    benign case in every cell with an eps_den, so the default check kills it (the fuzz tier's differential
    row in float16); 10 examples are enough since the edge is drawn after the search, whatever it drew."""
    import random

    from hypothesis import find, settings

    from tokenlaw.fuzz.engine import run_cell
    from tokenlaw.fuzz.strategies import EXTREMES, FILL, cases
    from tokenlaw.properties.catalogue import CONTRACTS

    m = next(m for m in EAGER_MUTANTS if m.name == "oattn_log_eps_after_rounding")
    op, law = m.apply(REG)["oattention"], CONTRACTS["differential"]
    bad = run_cell(op, law, torch.float16, examples=10, seed=0, replay_dir=None)
    assert bad.violated and bad.counterexample["eps_den"] == 1e-8, bad.detail      # 0 in float16
    # the edge's own FILL examples kill it alone: benign but for the combined extremes
    edge = find(cases(op, torch.float16, band=EXTREMES, **law.fuzz_bounds), lambda c: law.judge(c).violated,
                settings=settings(max_examples=FILL, database=None, deadline=None), random=random.Random(0))
    assert edge.eps_den == 1e-8 and edge.score_offset < -18 and edge.scale == 1.0 and not edge.near_null, edge
    ok = run_cell(REG["oattention"], law, torch.float16, examples=10, seed=0, replay_dir=None)
    assert not ok.violated, ok.detail
