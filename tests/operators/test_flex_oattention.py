"""OAttention written as FlexAttention mods (examples/flex/oattention_mods.py), against the built-in ``oattention``.

Three checks, each shown to fail on a seeded bug in the mods (a backend that runs the example's own pieces
with one of them wrong):

* a differential comparison with the built-in ``oattention`` on the same parameters and tokens (nulls
  among them), in each low precision, to the tolerance of ``tolerance.compare``: each side's own error
  predicted from its probe runs against its float64 run (the project's error model), nothing widened;
* the null contracts OAttention claims, on the mods version: ``null_receiver``, ``null_source_insertion``
  and ``empty_support`` (bit for bit where OAttention's are);
* ``formula_equivalence``: OAttention's direct formula, eps_den included.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.operators import flex, projections
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH
from tokenlaw.process import user_modules
from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS, collect, default_registry
from tokenlaw.properties.runner import cast
from tokenlaw.properties.tolerance import compare, evaluate

pytestmark = pytest.mark.skipif(flex.available() is not None, reason=str(flex.available()))

EXAMPLE = user_modules.load(str(Path(__file__).resolve().parents[2] / "examples" / "flex" / "oattention_mods.py"),
                            "--operators")
REG = collect(EXAMPLE)
MODS = REG["oattention_mods"]
BUILTIN = default_registry()["oattention"]
LOW = (torch.float32, torch.bfloat16, torch.float16)


# -- seeded bugs: the example's own pieces, one of them wrong ---------------------------------------------

def _run(x, params, *, bias_of=EXAMPLE.presence_bias, sink=True, gate=True):
    """The example's computation with its pieces swappable: presence, the score_mod's bias, the sink, the gate."""
    p = presence(TORCH, x, tau=params["tau"])
    q, k, v = projections.project_qkv(TORCH, x, **{n: params[n] for n in ("wq", "bq", "wk", "bk", "wv", "bv",
                                                                             "heads")})
    bias = bias_of(p, params["eps_den"])
    if sink:
        o = EXAMPLE.sink_attention(q, k, v, bias)
    else:                                   # the score_mod alone: flex's denominator has no eps_den
        o = flex.flex_core(flex.Mods(EXAMPLE.presence_score_mod(bias[:, :-1]), None), q, k, v)
    return projections.output(TORCH, p[:, None] * o if gate else o, params["wo"])


def forgets_null_keys(p, eps_den):
    """log p_j only where p_j > 0, and 0 (not -inf) for a null key: the null key keeps exp(s_ij) of mass."""
    bias = EXAMPLE.presence_bias(p, eps_den)
    return torch.where(torch.isinf(bias), torch.zeros_like(bias), bias)


BUGS = {
    "no_receiver_gate": dict(gate=False),
    "null_keys_seen": dict(bias_of=forgets_null_keys),
    "no_sink": dict(sink=False),
}


class _Seeded(backends.Backend):
    """The mods version with one seeded bug (``BUGS``): what the same checks must reject."""

    dtypes = ("float64", "float32")
    autograd = False

    def __init__(self, bug):
        self.name, self.bug = f"oattention-mods-{bug.replace('_', '-')}", BUGS[bug]

    def implements(self, op):
        return None if op.name == MODS.name else f"only {MODS.name}"

    def run(self, op, x, mask=None, **params):
        if mask is not None:
            raise InvalidArgument("mask: expected None (oattention_mods takes no mask)")
        return _run(x, params, **self.bug)


# -- the differential comparison with the built-in ---------------------------------------------------------

def _tokens(seed, n=7, d=4):
    """Tokens with a null at 1 and 4, and one near-null at 5 (|h|^2 far below tau: p tiny, log p very negative)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, d, generator=gen, dtype=torch.float64)
    x[:, [1, 4]] = 0.0
    x[:, 5] *= 1e-3
    return x, MODS.domain.draw(gen, d)


def against_builtin(run, x, params, dtype):
    """tolerance.compare of run(x) with the built-in oattention(x), both evaluated in dtype, float64 and
    dtype's probes: the bound is each side's predicted error (its probe's error against its own float64
    run, scaled by u_dtype / u_probe), summed; no allowance."""
    def mods(dt):
        return run(x.to(dt), cast(params, dt))

    def builtin(dt):
        return BUILTIN.fn(TORCH, x.to(dt), **cast(params, dt))
    return compare(evaluate(mods, dtype), evaluate(builtin, dtype), dtype)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("seed", range(3))
def test_the_mods_equal_the_builtin_oattention_to_the_derived_tolerance(seed, dtype):
    x, params = _tokens(seed)
    c = against_builtin(lambda x, p: MODS.fn(TORCH, x, **p), x, params, dtype)
    assert c.ok and math.isfinite(c.bound) and c.bound > 0, (c.discrepancy, c.bound, c.index)
    # float64 against float64: the same real number by two roundings, to a few ulps of the output
    with torch.no_grad():
        gap = (MODS.fn(TORCH, x, **params) - BUILTIN.fn(TORCH, x, **params)).abs().max()
        scale = BUILTIN.fn(TORCH, x, **params).abs().max()
    assert gap <= 64 * torch.finfo(torch.float64).eps * scale, (float(gap), float(scale))


@pytest.mark.parametrize("bug", ["no_receiver_gate", "null_keys_seen"])
@pytest.mark.parametrize("seed", range(3))
def test_the_differential_check_rejects_each_seeded_bug(seed, bug):
    x, params = _tokens(seed)
    c = against_builtin(lambda x, p: _run(x, p, **BUGS[bug]), x, params, torch.float32)
    assert not c.ok and c.discrepancy > 10 * c.bound, (c.discrepancy, c.bound)


def test_the_missing_sink_is_seen_where_eps_den_is_not_negligible():
    """Without the sink flex computes eps_den = 0: out_i is off by the factor D_i / (eps_den + D_i) per head,
    seen once eps_den is not negligible against D_i = sum_j p_j exp(s_ij) (here eps_den = 1, the domain's top)."""
    x, params = _tokens(0)
    params = {**params, "eps_den": 1.0}
    c = against_builtin(lambda x, p: _run(x, p, **BUGS["no_sink"]), x, params, torch.float32)
    assert not c.ok and c.discrepancy > 10 * c.bound, (c.discrepancy, c.bound)
    assert against_builtin(lambda x, p: _run(x, p), x, params, torch.float32).ok     # the same pieces, sink kept


def test_a_row_of_null_keys_is_exactly_zero_with_the_sink_and_by_convention_without():
    _, params = _tokens(1)
    nulls = torch.zeros(2, 5, 4, dtype=torch.float64)           # every key of every row null
    zero = torch.zeros_like(nulls)
    assert torch.equal(MODS.fn(TORCH, nulls, **params), zero)
    # without the receiver gate the row is still exactly 0: the sink takes weight 1 and its value is 0 ...
    assert torch.equal(_run(nulls, params, gate=False), zero)
    # ... and without the sink flex's own convention gives 0 for a row of -inf scores (the formula: 0/0)
    assert torch.equal(_run(nulls, params, gate=False, sink=False), zero)


# -- OAttention's contracts on the mods version, and the seeded bugs they reject ---------------------------

def _cell(contract, dtype=torch.float32, examples=6, backend="eager"):
    return run_cell(MODS, CONTRACTS[contract], dtype, examples=examples, seed=0, backend=backend, replay_dir=None)


@pytest.mark.parametrize("contract", ["null_receiver", "null_source_insertion", "empty_support",
                                      "formula_equivalence"])
def test_the_mods_hold_oattentions_null_contracts(contract):
    assert contract in BUILTIN.claims and contract in MODS.claims
    v = _cell(contract)
    assert v.status == V.Status.HOLDS and v.evidence.judged >= 1, v.detail


# (null_keys_seen is invisible to empty_support without a mask: every token null, the receiver gate zeros
# every row whatever the keys weighed; null_source_insertion sees it)
@pytest.mark.parametrize("bug,contract", [("no_receiver_gate", "null_receiver"),
                                          ("null_keys_seen", "null_source_insertion"),
                                          ("no_sink", "formula_equivalence")])
def test_the_same_contracts_reject_the_seeded_bugs(bug, contract):
    with backends.register(_Seeded(bug)) as wrong:
        v = _cell(contract, backend=wrong.name, examples=10)
    assert v.violated and v.counterexample is not None, v.detail


def test_gradient_cells_are_not_runnable_on_cpu():
    if torch.cuda.is_available():
        pytest.skip("a CUDA machine has flex's backward: the gradient cells run there")
    v = _cell("null_gradient", torch.float64, examples=2)
    assert v.status == V.Status.NOT_RUNNABLE and "FlexAttention has no CPU backward" in v.detail, v.detail


def test_the_declaration_claims_what_the_mods_can_hold():
    # every null contract OAttention claims and the mods version can hold; mask_respect needs a mask argument
    assert {"null_receiver", "null_source_insertion", "empty_support", "formula_equivalence"} <= set(MODS.claims)
    assert "mask_respect" in BUILTIN.claims and "mask_respect" not in MODS.claims
    assert MODS.reference is BUILTIN.reference          # judged against OAttention's own direct formula
    x, params = _tokens(0)
    with pytest.raises(InvalidArgument, match="eps_den"):
        MODS.fn(TORCH, x, **{**params, "eps_den": 0.0})
