"""declare_core: one call turns a q/k/v kernel into a judged implementation (operators/core.py).

Validation names the argument; absent keywords are never drawn; the conventions are shown in the report's
reasons; a user's module is collected by ``--operators``; the shipped nn.MultiheadAttention paths reproduce
pytorch issue 160064 with a shrunk counterexample while the SDPA path holds; and an expected violation that does
not reproduce fails as "expected violation NOT reproduced".
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from tokenlaw.fuzz.rows import run_rows
from tokenlaw.fuzz.core_strategies import core_cases
from tokenlaw.fuzz.engine import PROFILES
from tokenlaw.operators.core import Conventions, core_of, declare_core, formula
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process.user_modules import load
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect
from tokenlaw.properties.plan import plan

ROOT = Path(__file__).resolve().parents[2]


def plain(q, k, v, *, attn_mask=None, scale=None):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale)


@pytest.mark.parametrize("kwargs, named", [
    (dict(name="not an id"), "name"),
    (dict(fn=42), "fn"),
    (dict(fn=lambda q: q), "fn"),
    (dict(conventions=dict(causal="middle")), "conventions.causal"),
    (dict(conventions=dict(masked_row=math.inf)), "conventions.masked_row"),
    (dict(conventions=dict(masked_row=True)), "conventions.masked_row"),
    (dict(conventions=dict(mask_kinds=("bool", "ternary"))), "conventions.mask_kinds"),
    (dict(conventions=dict(mask_shapes="full")), "conventions.mask_shapes"),
    (dict(conventions=dict(nan_propagates=1)), "conventions.nan_propagates"),
    (dict(conventions=dict(alignment="top_left")), "conventions: unknown keys"),
    (dict(conventions="top_left"), "conventions"),
    (dict(gqa="yes"), "gqa"),
    (dict(max_head_dim=0), "max_head_dim"),
    (dict(not_runnable=""), "not_runnable"),
    (dict(agrees_with=plain), "agrees_with"),
    (dict(dtypes=("float16",)), "dtypes"),
    (dict(claims=["core_formula"]), "claims"),
])
def test_a_bad_declaration_names_its_argument(kwargs, named):
    args = dict(name="bad_core", fn=plain, module="doctest")
    args.update(kwargs)
    with pytest.raises(InvalidArgument, match=named.replace(".", r"\.")):
        declare_core(args.pop("name"), args.pop("fn"), **args)


def test_absent_keywords_are_declared_absent_and_never_drawn():
    op = declare_core("plain_core", plain, module="doctest")
    core = core_of(op)
    assert core.takes == {"attn_mask", "scale"} and not core.gqa
    reg = collect(_module_with(op))
    spec = reg["plain_core"]
    assert "core_causality" not in spec.claims and "core_gqa" not in spec.claims and "core_scale" in spec.claims

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(core_cases(spec, torch.float32))
    def drawn(case):
        assert not case.causal and case.hkv == case.hq
        kw = {k for k, v in case.keywords().items() if v is not None and v is not False}
        assert kw <= {"attn_mask", "scale"}
    drawn()


def test_the_conventions_are_in_the_reasons_the_report_shows():
    op = declare_core("shown_core", plain, module="doctest",
                      conventions=Conventions(causal="bottom_right", masked_row=math.nan, mask_kinds=("bool",)))
    spec = collect(_module_with(op))["shown_core"]
    reason = spec.claims["core_masked_row"]
    assert "causal bottom_right" in reason and "fully masked row -> nan" in reason and "masks bool" in reason


def test_the_formula_aligns_causality_and_gives_the_declared_masked_row():
    q, k, v = torch.randn(1, 1, 2, 3), torch.randn(1, 1, 4, 3), torch.randn(1, 1, 4, 2)
    mask = torch.tensor([[True, True, False, False], [False, False, False, False]])
    out = formula(q, k, v, attn_mask=mask, masked_row=math.nan)
    s = (q[0, 0, 0] @ k[0, 0, :2].T / math.sqrt(3)).softmax(-1)
    assert torch.allclose(out[0, 0, 0], (s @ v[0, 0, :2]).double()) and out[0, 0, 1].isnan().all()
    last = formula(q, k, v, is_causal=True, alignment="bottom_right")[0, 0, 1]
    full = formula(q[:, :, 1:], k, v)[0, 0, 0]
    assert torch.allclose(last, full)                      # bottom-right: the last query sees every key


def _module_with(op):
    import types
    module = types.ModuleType(op.__module__)
    setattr(module, op.__name__, op)
    return module


def test_a_users_module_is_collected_by_operators(tmp_path, monkeypatch):
    path = tmp_path / "mykernel_core.py"
    path.write_text("import torch\nfrom tokenlaw.operators.core import declare_core\n\n"
                    "def attend(q, k, v, *, is_causal=False):\n"
                    "    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)\n\n"
                    "attend_op = declare_core('attend_core', attend)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = collect(load(str(path), "--operators"))
    assert reg.names() == ["attend_core"] and "core_causality" in reg["attend_core"].claims


def test_the_example_kernels_hold_every_core_row():
    """examples/core_kernel/mykernel.py at the smoke profile (the default profile: docs/core.md)."""
    module = load(str(ROOT / "examples" / "core_kernel" / "mykernel.py"), "--operators")
    reg = collect(module)
    assert set(reg.names()) == {"my_attention", "my_chunked_attention"}
    rows = [r for r in plan(reg) if r.contract.startswith("core_")]
    run_rows(reg, rows, examples=PROFILES["smoke"], seed=0, replay_dir=None, progress=False)
    assert len(rows) >= 20
    for row in rows:
        assert row.outcome == V.Outcome.HOLDS, (row.id, [c.verdict.detail for c in row.cells])


def test_default_check_finds_the_need_weights_nan_and_the_sdpa_path_holds():
    """pytorch issue 160064 (need_weights=True) and PR 190486 (the eval fast path), each found unaided by the default
    profile and seed, shrunk; the SDPA path holds."""
    reg = collect("tokenlaw.integrations.torch_core")
    rows = plan(reg, operators=["mha_weights", "mha_sdpa", "mha_fast_path"],
                contracts=["core_masked_row", "core_paths_agree"])
    run_rows(reg, rows, examples=PROFILES["ci"], seed=0, replay_dir=None, progress=False)
    by = {r.id: r for r in rows}
    assert by["mha_sdpa-core_masked_row"].outcome == V.Outcome.HOLDS
    for op, cited in (("mha_weights", "160064"), ("mha_fast_path", "190486")):
        for law in ("core_masked_row", "core_paths_agree"):
            row = by[f"{op}-{law}"]
            assert row.outcome == V.Outcome.EXPECTED and cited in row.reason
            ce = row.cells[0].verdict.counterexample
            assert ce["n"] == 1 and ce["s"] == 1 and ce["batch"] == 1 and ce["heads"] == 1, ce


def test_an_expected_violation_that_does_not_reproduce_fails():
    """What a row turns into when upstream fixes a recorded bug: 'expected violation NOT reproduced'."""
    op = declare_core("fixed_core", plain, module="doctest",
                      violates={"core_masked_row": "pretend: upstream gave NaN here once"})
    reg = collect(_module_with(op))
    rows = plan(reg, operators=["fixed_core"], contracts=["core_masked_row"])
    run_rows(reg, rows, examples=PROFILES["smoke"], seed=0, replay_dir=None, progress=False)
    assert rows[0].outcome == V.Outcome.NOT_REPRODUCED


def test_the_core_strategy_reaches_every_part_of_its_domain():
    """300 draws for sdpa_math (nothing runs): long L and S, decode against a long cache, grouped heads, odd and prime
    head dims, Ev != E, every mask kind and shape, fully masked rows and heads, drawn scales."""
    spec = collect("tokenlaw.integrations.torch_core")["sdpa_math"]
    seen = []

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(core_cases(spec, torch.float32))
    def drawn(case):
        seen.append(case)
    drawn()
    assert max(c.n for c in seen) == 257 and max(c.s for c in seen) == 257
    assert any(c.s == 129 for c in seen) and any(c.s == 128 for c in seen)
    assert any(c.n == 1 and c.s > 64 for c in seen)                       # a decode step against a long cache
    assert any(c.hkv < c.hq for c in seen) and max(c.hq for c in seen) >= 4 and max(c.batch for c in seen) == 4
    assert any(c.d in (127, 251) for c in seen) and any(c.ev != c.d for c in seen)
    assert {c.core_mask for c in seen} == {"none", "bool", "additive"}
    assert {c.mask_shape for c in seen if c.core_mask != "none"} == {"full", "square", "rows", "cols", "padding"}
    assert any(c.hidden_rows for c in seen) and any(c.hidden_head is not None for c in seen)
    assert any(c.scale_value is not None for c in seen) and any(c.causal for c in seen)
    assert not any(c.causal and c.core_mask != "none" for c in seen)      # SDPA refuses a mask with is_causal


def test_the_backward_model_in_float64_is_the_formulas_autograd():
    """core_backward's float64 values are the formula's gradients (autograd of operators.core.formula), grouped
    heads, an additive mask, a fully masked row and causality included; its float32 bound is positive."""
    from tokenlaw.operators.core import visibility
    from tokenlaw.properties import core_backward
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((2, 4, 5, 3), (2, 2, 7, 3), (2, 2, 7, 2)))
    mask = torch.randn(2, 4, 5, 7, generator=g, dtype=torch.float64)
    mask[torch.rand(mask.shape, generator=g) < 0.3] = -math.inf
    mask[0, 1, 2] = -math.inf
    cot = torch.randn(2, 4, 5, 2, generator=g, dtype=torch.float64)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out = formula(*leaves, attn_mask=mask, is_causal=True, scale=0.7)
    want = torch.autograd.grad(out, leaves, cot)
    seen = visibility(mask, 5, 7, causal=True, alignment="top_left")
    bias = torch.where(mask > -math.inf, mask, torch.zeros_like(mask))
    got = core_backward.gradients(q, k, v, cot, seen=seen, bias=bias, scale=0.7, dtype=torch.float64)
    low = core_backward.gradients(q, k, v, cot, seen=seen, bias=bias, scale=0.7, dtype=torch.float32)
    for name, w in zip(core_backward.LEAVES, want):
        assert torch.allclose(got[name].v, w, rtol=1e-12, atol=1e-12), name
        assert bool((low[name].e > got[name].e).all()), name


def test_the_fast_path_declaration_is_the_modules_own_fast_path():
    """mha_fast_path, given q = k = v, is bit for bit what nn.MultiheadAttention's eval forward returns (its fast
    path: query, key and value one tensor, no_grad, even heads, bool mask), NaN rows included."""
    from tokenlaw.integrations import torch_core as tc
    g = torch.Generator().manual_seed(0)
    for h, e, n in ((2, 3, 4), (4, 5, 9)):
        q = torch.randn(2, h, n, e, generator=g)
        m = tc._module(h * e, h, torch.float32, True).eval()
        x = q.transpose(1, 2).reshape(2, n, h * e)
        hidden = torch.rand(n, n, generator=g) < 0.3
        hidden[0] = True                                  # a fully masked row: NaN on this path (PR 190486)
        for mask in (None, hidden):
            with torch.no_grad():
                want = m(x, x, x, attn_mask=mask, need_weights=False)[0].reshape(2, n, h, e).transpose(1, 2)
            got = core_of(tc.mha_fast_path)(q, q, q, attn_mask=None if mask is None else ~mask)
            assert bool(((want == got) | (want.isnan() & got.isnan())).all())
        assert bool(got[:, :, 0].isnan().all())
