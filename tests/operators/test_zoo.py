"""The normaliser zoo: each operator against its plain formula, its fully-masked-row convention in every dtype,
the sparse maps against the ``entmax`` package (and what happens without it), and the declarations' checks.

Every check here is shown to reject a wrong operator or declaration too (the ``wrong_*`` tests).
"""
from __future__ import annotations

import dataclasses
import math
import sys
import types

import pytest
import torch

from tokenlaw.operators import DeclarationError, InvalidArgument
from tokenlaw.operators.zoo import sparsemax as sm
from tokenlaw.operators.external import External
from tokenlaw.operators.registry import Domain, declare
from tokenlaw.operators.roles import Adjustments
from tokenlaw.operators.score_attention import attend
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, collect, default_registry
from tokenlaw.properties.plan import plan
from tokenlaw.fuzz.rows import run_rows

ZOO = ("sparsemax", "entmax15", "softmax_one", "sink_softmax", "sigmoid_attn", "rela", "softpick")
REGISTRY = collect("tokenlaw.operators", "tokenlaw.operators.zoo")    # the zoo is opt-in (operators/zoo/__init__.py)


def _inputs(op, seed=0, n=6, d=8, scale=2.0):
    """x, a random mask whose row 2 sees nothing, and the operator's float64 parameters."""
    g = torch.Generator().manual_seed(seed)
    p = op.domain.params(g, d)
    x = torch.randn(2, n, d, generator=g, dtype=torch.float64) * scale
    m = (torch.rand(2, n, n, generator=g, dtype=torch.float64) < 0.6).double()
    m[:, range(n), range(n)] = 1.0
    m[:, 2] = 0.0
    return x, m, p


@pytest.mark.parametrize("name", ZOO)
def test_formula_matches_plain_reference(name):
    """The optimised xp code equals the reference written from the formula, masked rows included (float64)."""
    op = REGISTRY[name]
    for seed in range(3):
        x, m, p = _inputs(op, seed)
        out, ref = op.fn(TORCH, x, m, **p), op.reference(TORCH, x, m, **p)
        assert torch.isfinite(out).all()
        assert float((out - ref).abs().max()) <= 1e-12 * max(1.0, float(ref.abs().max())), name


def _sparsemax_off(xp, s, mask=None):
    """sparsemax with its support test at 0.4 instead of 1/2: a seeded bug the reference must see."""
    m = sm.visible(xp, s, mask)
    active = xp.gt(m, 0)
    h = xp.where(active, s * 0.5 - sm.row_top(xp, s, m) * 0.5, xp.zeros_like(s))
    inside = sm.inside_support(xp, h, m, 1, 0.4)
    size = xp.sum(xp.where(inside, xp.ones_like(s), xp.zeros_like(s)), axis=-1, keepdims=True)
    total = xp.sum(xp.where(inside, h, xp.zeros_like(s)), axis=-1, keepdims=True)
    tau = xp.div(total - 0.5, xp.where(xp.gt(size, 0), size, xp.ones_like(size)))
    return xp.where(active, xp.relu(h - tau), xp.zeros_like(s)) * 2.0


def test_wrong_formula_is_caught_by_the_reference():
    """A seeded bug in the support test (and a sink applied to the wrong head) disagrees with the reference."""
    op = REGISTRY["sparsemax"]
    gaps = []
    for seed in range(3):
        x, m, p = _inputs(op, seed, scale=1.0)
        bad = attend(TORCH, x, m, _sparsemax_off, **p)
        gaps.append(float((bad - op.reference(TORCH, x, m, **p)).abs().max()))
    assert max(gaps) > 1e-3
    sink = REGISTRY["sink_softmax"]
    x, m, p = _inputs(sink, 0)
    swapped = dict(p, sinks=p["sinks"].flip(0) + torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert float((sink.fn(TORCH, x, m, **swapped) - sink.reference(TORCH, x, m, **p)).abs().max()) > 1e-3


def test_sparse_maps_are_distributions_with_exact_zeros():
    """sparsemax / entmax15 rows sum to 1, have exact zeros, and a fully masked row is 0 (no NaN)."""
    s = torch.tensor([[[3.0, 0.1, -2.0, 2.9], [0.0, 0.0, 0.0, 0.0]]], dtype=torch.float64)
    m = torch.tensor([[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]], dtype=torch.float64)
    for name in ("sparsemax", "entmax15"):
        w = REGISTRY[name].weights(TORCH, s, m)
        assert float((w[0, 0].sum() - 1).abs()) < 1e-15 and w[0, 0, 2] == 0.0 and w[0, 0, 1] == 0.0
        assert (w[0, 1] == 0).all()
    # sparsemax of [3, 2.9] over the support: tau = (5.9 - 1) / 2 = 2.45
    w = REGISTRY["sparsemax"].weights(TORCH, s, m)[0, 0]
    assert torch.allclose(w, torch.tensor([0.55, 0.0, 0.0, 0.45], dtype=torch.float64), atol=1e-15)


@pytest.mark.parametrize("name", ZOO)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_masked_row_convention_in_every_dtype(name, dtype):
    """The declared convention (0 for the zoo) comes out bit for bit in every dtype, huge biases included."""
    op = REGISTRY[name]
    assert op.masked_row == 0.0
    for seed, bias in ((0, 1.0), (1, 100.0)):
        case = Case(op=op, dtype=dtype, seed=seed, n=5, d=8, pos=seed + 1, bias_scale=bias)
        verdict = CONTRACTS["masked_row"].judge(case)
        assert verdict.status == V.Status.HOLDS, verdict.detail


def test_wrong_masked_row_declaration_is_rejected():
    """Declaring NaN for a zero row, or 0 for SDPA's NaN row, is a violation of masked_row."""
    for name, wrong in (("sparsemax", float("nan")), ("softpick", 1.0), ("sdpa", 0.0)):
        op = dataclasses.replace(REGISTRY[name], masked_row=wrong)
        case = Case(op=op, dtype=torch.float32, seed=0, n=4, d=8)
        verdict = CONTRACTS["masked_row"].judge(case)
        assert verdict.status == V.Status.VIOLATED, (name, verdict.detail)
    sdpa = dataclasses.replace(REGISTRY["sdpa"], masked_row=float("nan"))
    assert CONTRACTS["masked_row"].judge(Case(op=sdpa, dtype=torch.float16, seed=0, n=4, d=8)).status == V.Status.HOLDS


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_package_agreement(name):
    """The xp sparse maps agree with the entmax package (float64 and float32 cases, masks drawn)."""
    pytest.importorskip("entmax", reason="entmax not installed (pip install entmax==1.3, or tokenlaw[zoo])")
    op = REGISTRY[name]
    for dtype in (torch.float64, torch.float32):
        for seed in range(3):
            case = Case(op=op, dtype=dtype, seed=seed, n=7, d=8, mask_density=0.6, scale=2.0)
            verdict = CONTRACTS["package_agreement"].judge(case)
            assert verdict.status == V.Status.HOLDS, verdict.detail


def test_wrong_package_pairing_is_rejected():
    """sparsemax declared as entmax.entmax15 (a wrong external=) violates package_agreement."""
    pytest.importorskip("entmax", reason="entmax not installed (pip install entmax==1.3, or tokenlaw[zoo])")
    op = dataclasses.replace(REGISTRY["sparsemax"], external=External("entmax", "entmax15", "pip install entmax"))
    verdicts = [CONTRACTS["package_agreement"].judge(Case(op=op, dtype=torch.float64, seed=s, n=6, d=8))
                for s in range(3)]
    assert any(v.status == V.Status.VIOLATED for v in verdicts)


def test_without_entmax_the_row_is_not_runnable_and_the_operators_still_run(monkeypatch):
    """With the module hidden the cross-check says 'entmax not installed' (not runnable here); xp code still runs."""
    monkeypatch.setitem(sys.modules, "entmax", None)          # import entmax now raises ImportError
    op = REGISTRY["entmax15"]
    assert op.external.load() is None
    assert op.external.missing.startswith("entmax not installed")
    rows = plan(REGISTRY, operators=["entmax15"], contracts=["package_agreement"], dtypes=["float64"])
    (done,) = run_rows(REGISTRY, rows, examples=2, progress=False)
    assert done.outcome == V.Outcome.NOT_RUNNABLE
    assert all("entmax not installed" in c.verdict.detail for c in done.cells)
    x, m, p = _inputs(op)
    assert torch.isfinite(op.fn(TORCH, x, m, **p)).all()


def test_sink_logits_follow_the_head_count():
    """A drawn head count resizes the per-head sinks (roles.per_head); a mismatched sinks is refused by name."""
    op = REGISTRY["sink_softmax"]
    p = op.domain.draw(torch.Generator().manual_seed(0), 8)
    four = op.domain.adjust(p, Adjustments(heads=4))
    assert four["heads"] == 4 and tuple(four["sinks"].shape) == (4,)
    assert torch.equal(four["sinks"], p["sinks"][[0, 1, 0, 1]])
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    assert torch.isfinite(op.fn(TORCH, x, None, **four)).all()
    with pytest.raises(InvalidArgument, match=r"^sinks"):
        op.fn(TORCH, x, None, **dict(four, heads=2))


def test_sigmoid_counts_visible_keys_only():
    """b = -log n with n the visible keys: a row seeing one key of score log 1 = 0 gets sigma(0) = 1/2."""
    s = torch.zeros(1, 1, 1, 3, dtype=torch.float64)
    m = torch.tensor([[[[1.0, 0.0, 0.0]]]], dtype=torch.float64)
    w = REGISTRY["sigmoid_attn"].weights(TORCH, s, m)
    assert w.tolist() == [[[[0.5, 0.0, 0.0]]]]
    w = REGISTRY["sigmoid_attn"].weights(TORCH, s, torch.ones_like(m))
    assert torch.allclose(w, torch.full_like(w, 0.25), atol=1e-15)       # sigma(-log 3) = 1/4


def test_declaration_checks():
    """masked_row must be a float and external an External: anything else is refused at collection."""
    def module(**extra):
        mod = types.ModuleType("scratch_zoo")

        @declare(name="scratch", domain=Domain(), traits={"token_local"}, claims={"zero_absorption": "x"}, **extra)
        def scratch(xp, x):
            return x
        scratch.__module__ = mod.__name__
        mod.scratch = scratch
        return mod

    assert collect(module(masked_row=0.0))["scratch"].masked_row == 0.0
    assert math.isnan(collect(module(masked_row=float("nan")))["scratch"].masked_row)
    for bad in (dict(masked_row="0"), dict(masked_row=True), dict(external="entmax")):
        with pytest.raises(DeclarationError, match="masked_row|external"):
            collect(module(**bad))
    with pytest.raises(DeclarationError, match="External.install"):
        External("entmax", "sparsemax", "")


@pytest.mark.parametrize("name", ["softmax_one", "sink_softmax", "softpick"])
@pytest.mark.parametrize("dtype,bias,offset", [(torch.float32, 10.0, 0.0), (torch.float16, 1.0, -1024.0)])
def test_low_rows_keep_finite_gradients(name, dtype, bias, offset):
    """Regression (smoke, seed 0): with every score far below 0 the shift M must stay >= 0 (>= b_h), else
    exp(-M) overflows the denominator and the gradient is NaN."""
    op = REGISTRY[name]
    case = Case(op=op, dtype=dtype, seed=0, n=1, d=8 if dtype == torch.float32 else 4, bias_scale=bias,
                score_offset=offset)
    verdict = CONTRACTS["finite"].judge(case)
    assert verdict.status == V.Status.HOLDS, verdict.detail
