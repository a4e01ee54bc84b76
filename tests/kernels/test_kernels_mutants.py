"""Every kernel mutant is killed by some contract on the interpreter backend.

The fast tests judge one hand-picked example per mutant (the kind of input
the search finds: a sequence crossing the tile edge for the halo and skip
bugs); the slow test lets the fuzz engine search for the kill from scratch.
Backward mutants leave the forward clean and are killed by the gradient
contracts (``implementation_laws.gradient_agreement`` and the exact-zero ones).
Each fast test also checks the clean kernel passes the same example, so a
kill is the mutant's doing.
"""
from __future__ import annotations


import pytest
import torch

from tokenlaw.kernels import capabilities
from tokenlaw.kernels.mutants import KERNEL_MUTANTS, catalogue
from tokenlaw.properties.case import Case
from tokenlaw.properties.plan import plan
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.mutants import Mutant

pytestmark = pytest.mark.skipif(not capabilities.interpreting(), reason="these tests run the CPU interpreter")

# mutant -> (operator, contract, Case fields) of one killing example
KILLS = {
    "running_max_over_nulls": ("oattention", "null_key_immunity", dict(n=5, pos=2, seed=3)),
    "eps_den_not_rescaled": ("oattention", "eager_agreement", dict(n=6, seed=1)),
    "receiver_gate_missing": ("oattention", "null_receiver", dict(n=4, null=(1,), seed=2)),
    "fir_halo_off_by_one": ("pn_fir_tau", "eager_agreement", dict(n=12, seed=4)),
    "gate_missing": ("pn_fir_tau", "eager_agreement", dict(n=6, seed=5)),
    "tile_skip_drops_live_tile": ("pn_fir_tau", "eager_agreement", dict(n=12, seed=6)),
    # backward mutants: the forward is clean, the gradients are not
    "delta_dropped": ("sm_fir", "gradient_agreement", dict(n=12, seed=4)),
    "gate_derivative_dropped": ("pn_fir_tau", "gradient_agreement", dict(n=12, seed=4)),
    "dk_fir_halo_dropped": ("pn_fir_tau", "gradient_agreement", dict(n=12, seed=4)),
    "presence_gradient_leaks": ("oattention", "masked_gradient", dict(n=12, seed=4, pos=3)),
    "null_receiver_gradient_leaks": ("oattention", "null_gradient", dict(n=12, seed=4, pos=3)),
    "dk_scale_missing": ("oattention", "gradient_agreement", dict(n=12, seed=4, heads=2)),
}


def test_catalogue_shape():
    assert {m.name for m in KERNEL_MUTANTS} == set(KILLS)
    assert catalogue() == tuple(KERNEL_MUTANTS)          # what the app's mutate command gathers
    for m in KERNEL_MUTANTS:
        assert isinstance(m, Mutant)                       # the eager mutants' type
        assert m.backend == "triton" and m.operators and m.description and callable(m.patch)
        registry = object()
        assert m.apply(registry) is registry               # no registry copy: the bug lives in the patched kernel


@pytest.mark.parametrize("mutant", KERNEL_MUTANTS, ids=lambda m: m.name)
def test_mutant_is_killed_and_the_clean_kernel_is_not(mutant, registry):
    op, name, fields = KILLS[mutant.name]
    case = Case(op=registry[op], dtype=torch.float32, backend="triton", d=8, **fields)
    assert not CONTRACTS[name](case).violated, "the clean kernel must pass the killing example"
    case = Case(op=registry[op], dtype=torch.float32, backend="triton", d=8, **fields)
    with mutant.patch():
        verdict = CONTRACTS[name](case)
    assert verdict.violated, verdict.detail


def test_halo_mutant_also_breaks_sm_fir(registry):
    mutant = next(m for m in KERNEL_MUTANTS if m.name == "fir_halo_off_by_one")
    case = Case(op=registry["sm_fir"], dtype=torch.float32, backend="triton", d=8, n=12, seed=4)
    with mutant.patch():
        assert CONTRACTS["eager_agreement"](case).violated


def test_halo_mutant_of_the_backward_also_breaks_sm_fir(registry):
    mutant = next(m for m in KERNEL_MUTANTS if m.name == "dk_fir_halo_dropped")
    case = Case(op=registry["sm_fir"], dtype=torch.float32, backend="triton", d=8, n=12, seed=4)
    with mutant.patch():
        assert CONTRACTS["gradient_agreement"](case).violated


def test_a_mutant_patch_leaves_the_real_kernel_in_place(registry):
    from tokenlaw.kernels import oattention_fwd

    before = oattention_fwd.oattention_fwd_kernel
    with KERNEL_MUTANTS[0].patch():
        assert oattention_fwd.oattention_fwd_kernel is not before
    assert oattention_fwd.oattention_fwd_kernel is before


@pytest.mark.slow  # reason: a Hypothesis search per mutant on the interpreter (~10-60 s each)
@pytest.mark.parametrize("mutant", KERNEL_MUTANTS, ids=lambda m: m.name)
def test_search_finds_a_kill(mutant, registry):
    from tokenlaw.fuzz.engine import run_cell

    for op in mutant.operators:
        rows = [r for r in plan(registry, operators=[op], backend="triton") if r.declared == "claims" and r.cells]
        with mutant.patch():
            killed = [r.contract for r in rows
                      if run_cell(registry[op], CONTRACTS[r.contract], torch.float32, examples=30,
                                  backend="triton").violated]
        assert killed, f"{mutant.name} survived every claim of {op}"
