"""Hosts declared as compositions: generated layers, depth variants, closure fuzzed per depth and dtype."""
from __future__ import annotations

import pytest
import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.fuzz.strategies import EDGES, FILL, reachable_bands
from tokenlaw.operators import hosts
from tokenlaw.operators.composition import Composition, compose_layers, host_params
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.ffn import offn
from tokenlaw.operators.norms import onorm
from tokenlaw.operators.oattention import oattention
from tokenlaw.operators.ordered_xp import ORDERED
from tokenlaw.properties.catalogue import collect
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.statement import insert_null

REGISTRY = collect()


def test_every_component_is_a_registered_operator():
    for name, comp in hosts.COMPOSITIONS.items():
        assert name in REGISTRY
        for part in comp.components:
            assert part in REGISTRY, f"{name}: component {part} is not a registered operator"


def test_depth_variants_are_declared_for_every_family():
    for family in ("standard_host", "oa_only_host", "otransformer"):
        depths = {REGISTRY[n].layers.composition.depth for n in REGISTRY.names()
                  if n == family or n.startswith(family + "_l")}
        assert depths == {1, 2, 3, 4}


def test_public_layer_functions_keep_their_signature():
    p = hosts.host_params(torch.Generator().manual_seed(0), 4)
    x = torch.randn(1, 3, 4, dtype=torch.float64)
    for fn in (hosts.standard_layers, hosts.oa_only_layers, hosts.otransformer_layers):
        states = fn(TORCH, x, None, blocks=p["blocks"], tau=p["tau"], eps_den=p["eps_den"])
        assert len(states) == 4 and all(s.shape == x.shape for s in states)


def test_otransformer_layers_follow_spec_blocks():
    """The generated OTransformer equals the hand-written block of docs/mathematics.md#hosts: ONorm, hidden-carrier OAttention, OFFN."""
    g = torch.Generator().manual_seed(3)
    p = hosts.host_params(g, 4)
    x = torch.randn(2, 4, 4, dtype=torch.float64, generator=g)
    h, want = x, []
    for b in p["blocks"]:
        h = h + oattention(TORCH, onorm(TORCH, h, tau=p["tau"], **b["norm1"]), None, carrier=h,
                           tau=p["tau"], eps_den=p["eps_den"], **b["attn"])
        want.append(h)
        h = h + offn(TORCH, onorm(TORCH, h, tau=p["tau"], **b["norm2"]), carrier=h, tau=p["tau"], **b["ffn"])
        want.append(h)
    got = hosts.otransformer_layers(TORCH, x, blocks=p["blocks"], tau=p["tau"], eps_den=p["eps_den"])
    for a, b in zip(got, want):
        assert torch.equal(a, b)


def test_tabular_host_states_include_standardize_and_inject():
    comp = hosts.COMPOSITIONS["tabular_otransformer"]
    p = hosts.host_params(torch.Generator().manual_seed(0), 4, inject=True)
    names = []
    compose_layers(comp, TORCH, torch.randn(1, 3, 4, dtype=torch.float64), **p, trace=lambda n, v: names.append(n))
    assert names[:3] == ["standardize", "inject", "block0.norm1"]


def test_bad_compositions_name_the_argument():
    with pytest.raises(InvalidArgument, match="attention"):
        Composition("x", norm="layernorm", attention="softmax", ffn="offn")
    with pytest.raises(InvalidArgument, match="depth"):
        Composition("x", norm="layernorm", attention="sdpa", ffn="offn", depth=0)
    p = host_params(torch.Generator().manual_seed(0), 4, depth=1)
    with pytest.raises(InvalidArgument, match="blocks"):
        hosts.otransformer_layers(TORCH, torch.randn(1, 2, 4, dtype=torch.float64), **dict(p, blocks=[]))
    # one block of a depth-2 host runs alone (the symbolic tier proves closure block by block)
    assert len(hosts.otransformer_layers(TORCH, torch.randn(1, 2, 4, dtype=torch.float64), **p)) == 2
    with pytest.raises(InvalidArgument, match="inject"):
        compose_layers(hosts.COMPOSITIONS["tabular_otransformer"], TORCH, torch.randn(1, 2, 4, dtype=torch.float64),
                       **host_params(torch.Generator().manual_seed(0), 4))


CLOSURE_ROWS = [(f"{fam}{'' if d == 2 else f'_l{d}'}", dt)
                for fam in ("standard_host", "oa_only_host", "otransformer") for d in (1, 2, 3, 4)
                for dt in ("float64", "float32", "float16", "bfloat16")]


@pytest.mark.parametrize("name,dtype", CLOSURE_ROWS, ids=[f"{n}-closure-{d}" for n, d in CLOSURE_ROWS])
def test_closure_fuzzed_per_depth_and_dtype(name, dtype):
    op = REGISTRY[name]
    v = run_cell(op, CONTRACTS["closure"], getattr(torch, dtype), examples=8, seed=0)
    if op.declared("closure") == "claims":
        assert not v.violated, v.detail
        # the whole seeded search ran, plus at most FILL examples in each reachable length band it missed
        # and at each explicit edge (strategies.banded_find), and every reachable band was drawn
        contract = CONTRACTS["closure"]
        bands = () if contract.fuzz_bounds.get("core") else reachable_bands(**contract.fuzz_bounds)
        assert 8 <= v.examples <= 8 + FILL * (len(bands) + len(EDGES)), (v.examples, bands)
        drawn = (v.evidence.drawn if v.evidence is not None else {}).get("n", {})
        assert [b for b in bands if not drawn.get(b)] == [], drawn
    else:
        assert v.violated, v.detail
        assert v.counterexample is not None and v.counterexample["n"] == 1   # shrunk to one old token
        # standard: SDPA already breaks sub-layer 0; OA-only: attention keeps the null, the FFN (sub-layer 1) breaks
        first = "layer 0" if name.startswith("standard") else "layer 1 (zero absorption lost)"
        assert f"first break at {first}" in v.detail


def test_ordered_namespace_makes_null_insertion_bit_exact():
    comp = hosts.COMPOSITIONS["otransformer_l3"]
    p = hosts.host_params(torch.Generator().manual_seed(1), 8, depth=3)
    x = torch.randn(2, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    base = compose_layers(comp, ORDERED, x, **p)
    assert (base[-1] - compose_layers(comp, TORCH, x, **p)[-1]).abs().max() < 1e-12
    for k in range(6):
        new = compose_layers(comp, ORDERED, insert_null(TORCH, x, k), **p)
        keep = [i for i in range(6) if i != k]
        for a, b in zip(new, base):
            assert torch.equal(a[:, keep], b) and bool((a[:, k] == 0).all())


def test_a_host_whose_output_is_marked_as_its_last_state_is_that_state_bit_for_bit():
    """closure reuses layers[-1] as the output only where ``fn.last_state_of is op.layers`` (the hosts that
    operators.hosts builds): each such host's own output is that state exactly, in every dtype, and a
    hand-written host (its fn adds 0.1 n) carries no mark, so its output is run and judged."""
    from tokenlaw.properties.case import Case
    marked = [n for n in REGISTRY.names() if getattr(REGISTRY[n].fn, "last_state_of", None) is not None]
    assert len(marked) >= 12
    for name in marked:
        op = REGISTRY[name]
        assert op.fn.last_state_of is op.layers and op.fn.__module__ == hosts.__name__, name
        for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
            case = Case(op=op, dtype=dtype, seed=3, batch=2, n=5, d=op.domain.d_model[0], mask_kind="causal")
            out = case.runner.run(case.x, case.mask, dtype=dtype)
            last = case.runner.layers(case.x, case.mask, dtype=dtype)[-1]
            assert torch.equal(out, last) or (torch.isnan(out) == torch.isnan(last)).all() and \
                torch.equal(torch.nan_to_num(out), torch.nan_to_num(last)), (name, dtype)
    from tests.canaries import host_output_shift
    assert not hasattr(host_output_shift.canary_host_output_shift, "last_state_of")
