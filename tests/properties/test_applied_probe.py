"""The row probe reads the same weights as the stacked probe (properties/applied.py, issue 19's budget).

The score laws read W(S) off an operator's output.  Where the stacked probe ([s_i; e_i] tokens) would need a
width of 256 or 1024 and a width of n suffices, torch takes the row probe (e_i tokens, S in wq, one run per
batch element).  Both are exact, so for an operator whose output is W(S) V they must give the *same bits*:
every score normaliser in the registry and the zoo, in every dtype, at lengths where the row probe is taken,
with a random mask, a causal one and a fully masked row.  A body that reads its tokens beyond the projections
(here: an output scaled by the mean token norm) applies no W(S) of its own and the two probes disagree on it,
which is what the equality checks.
"""
from __future__ import annotations

import sys

import pytest
import torch

from tokenlaw.operators.registry import declare
from tokenlaw.operators.sdpa import sdpa
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import applied
from tokenlaw.properties.applied import applied_weights, power_of_4, probe_width
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import collect

REGISTRY = collect("tokenlaw.operators", "tokenlaw.operators.zoo")
NORMALISERS = sorted(op.name for op in REGISTRY if "score_normaliser" in op.traits)
WIDTH_DEPENDENT = {"rela"}        # RMS-normalises each head's output over its D features
DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _stacked(monkeypatch):
    monkeypatch.setattr(applied, "_rows_cheaper", lambda xp, s: False)


def _inputs(op, n, dtype, seed):
    case = Case(op=op, dtype=dtype, n=n, batch=2, d=op.domain.d_model[0], seed=seed, mask_density=0.6)
    g = torch.Generator().manual_seed(seed)
    s = (3.0 * torch.randn(2, n, n, generator=g, dtype=torch.float64)).to(dtype)
    mask = None
    if op.domain.mask != "none":
        mask = (torch.rand(2, n, n, generator=g) < 0.6).to(dtype)
        mask[:, :, 0] = 1
        mask[1, 3] = 0                              # a row that sees no key
    params = applied.law_params(op, case.runner.arguments(dtype=dtype))
    params.pop("mask", None)
    return s, mask, params


def test_the_row_probe_is_taken_where_it_saves_work():
    # 16 times fewer multiply-adds per projection at n = 33..64 and 129..130; never at 65..128 (both 256)
    assert [(probe_width(n), power_of_4(n)) for n in (33, 64, 65, 128, 129)] == [
        (256, 64), (256, 64), (256, 256), (256, 256), (1024, 256)]
    s = torch.zeros(1, 40, 40)
    assert applied._rows_cheaper(TORCH, s)
    assert not applied._rows_cheaper(TORCH, torch.zeros(1, 80, 80))
    s[0, 1, 2] = float("inf")                       # a non-finite score: the stacked probe, which poisons one row
    assert not applied._rows_cheaper(TORCH, s)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", NORMALISERS)
def test_row_and_stacked_probes_read_the_same_bits(name, dtype, monkeypatch):
    op = REGISTRY[name]
    for n, seed in ((40, 0), (129, 1)):
        s, mask, params = _inputs(op, n, dtype, seed)
        assert applied._rows_cheaper(TORCH, s)
        rows = applied_weights(op, TORCH, s, mask, **params)
        with monkeypatch.context() as m:
            _stacked(m)
            stacked = applied_weights(op, TORCH, s, mask, **params)
        assert rows.shape == stacked.shape == (2, n, n)
        assert torch.equal(rows.isnan(), stacked.isnan()), (name, n)
        if name in WIDTH_DEPENDENT:
            # o'_i = a_i / sqrt(sum_k a_ik^2 / D + eps): a function of the probe's width D in either probe; the two
            # agree on which weights are 0 and on their signs (what rela's score laws, silence among them, judge)
            assert torch.equal(rows == 0, stacked == 0) and torch.equal(rows.sign(), stacked.sign()), (name, n)
            continue
        same = rows.isnan() | (rows == stacked)
        assert bool(same.all()), (name, n, float((rows.double() - stacked.double()).abs().nan_to_num().max()))


@declare(name="norm_scaled_sdpa", domain=REGISTRY["sdpa"].domain, traits={"token_mixing", "masked", "score_normaliser"},
         weights=REGISTRY["sdpa"].weights, claims={"finite": "a product of finite terms"})
def norm_scaled_sdpa(xp, x, mask=None, *, wq, bq, wk, bk, wv, bv, wo, heads):
    """sdpa times the mean squared token norm: not W(S) V (it reads its tokens beyond the projections)."""
    out = sdpa(xp, x, mask, wq=wq, bq=bq, wk=wk, bk=bk, wv=wv, bv=bv, wo=wo, heads=heads)
    return out * xp.mean(xp.sum(x * x, axis=-1, keepdims=True), axis=-2, keepdims=True)


def test_a_body_that_reads_its_tokens_is_told_apart(monkeypatch):
    op = REGISTRY["sdpa"]
    s, mask, _ = _inputs(op, 40, torch.float64, 0)
    odd = collect(sys.modules[__name__])["norm_scaled_sdpa"]
    rows = applied_weights(odd, TORCH, s, mask)
    _stacked(monkeypatch)
    stacked = applied_weights(odd, TORCH, s, mask)
    assert not torch.allclose(rows.nan_to_num(), stacked.nan_to_num())



@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_one_term_products_read_the_gemms_bits(dtype, monkeypatch):
    """The probes' products formed as one-term gathers (xp.one_term_products) read the same bits as the GEMM,
    every score normaliser, both probes, scores of two magnitudes; declined where it does not apply (the row
    probe's dense score matrix)."""
    from tokenlaw.operators import xp as X
    real, taken = X.one_term_product, []

    def counted(a, b, least=0):
        out = real(a, b, least)
        taken.append(out is not None)
        return out

    for name in NORMALISERS:
        op = REGISTRY[name]
        for n, seed, stacked in ((70, 2, True), (40, 3, False)):
            s, mask, params = _inputs(op, n, dtype, seed)
            s = s * torch.tensor([1.0, 1e3], dtype=dtype)[:, None, None]
            with monkeypatch.context() as m:
                if stacked:
                    _stacked(m)
                m.setattr(X, "one_term_product", counted)
                fast = applied_weights(op, TORCH, s, mask, **params)
                m.setattr(X, "one_term_product", lambda a, b, least=0: None)
                gemm = applied_weights(op, TORCH, s, mask, **params)
            assert torch.equal(fast.isnan(), gemm.isnan()), (name, n)
            same = fast.isnan() | (fast == gemm) & (torch.signbit(fast) == torch.signbit(gemm))
            assert bool(same.all()), (name, n)
    assert any(taken) and not all(taken)        # taken where it applies, declined elsewhere
