"""Direct facts about the eager operators (beyond the generated contract cells)."""
from __future__ import annotations

import math

import torch

from tokenlaw.operators import TORCH
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.operators.fir import TAPS, fir
from tokenlaw.operators.modules import FIRAttention, Host, OAttention, SDPAttention
from tokenlaw.operators.oattention import oattention, oattention_direct, oattention_params
from tokenlaw.operators.sdpa import sdpa


def test_fir_taps_are_the_normalised_half_gaussian():
    raw = [math.exp(-k * k / 8.0) for k in range(7)]
    assert len(TAPS) == 7 and abs(sum(TAPS) - 1.0) < 1e-15
    for t, r in zip(TAPS, raw):
        assert abs(t - r / sum(raw)) < 1e-15
    x = torch.zeros(1, 9, 1, dtype=torch.float64)
    x[0, 2] = 1.0
    assert torch.allclose(fir(TORCH, x)[0, 2:9, 0], torch.tensor(TAPS, dtype=torch.float64), rtol=0, atol=0)
    assert (fir(TORCH, x)[0, :2] == 0).all()


def test_stabilised_oattention_keeps_eps_den_inside_the_rescaling():
    # Large scores: exp(-M) is tiny, so a version that adds eps_den unscaled would differ visibly.
    g = torch.Generator().manual_seed(3)
    p = oattention_params(g, 4)
    p["eps_den"] = 0.5
    x = torch.randn(1, 4, 4, generator=g, dtype=torch.float64) * 3
    a, b = oattention(TORCH, x, **p), oattention_direct(TORCH, x, **p)
    assert torch.allclose(a, b, rtol=1e-12, atol=1e-14)


def test_null_key_with_huge_bias_cannot_underflow_active_tokens():
    g = torch.Generator().manual_seed(1)
    p = oattention_params(g, 4)
    p["bk"] = p["bk"] * 1e4          # a null token still has k = bk: huge scores
    x = torch.randn(1, 3, 4, generator=g, dtype=torch.float64)
    x0 = torch.cat([x[:, :1], torch.zeros(1, 1, 4, dtype=torch.float64), x[:, 1:]], 1)
    a, b = oattention(TORCH, x, **p), oattention(TORCH, x0, **p)
    assert torch.isfinite(b).all()
    assert (b[:, 1] == 0).all()
    assert torch.allclose(b[:, [0, 2, 3]], a, rtol=1e-12, atol=1e-14)


def test_modules_call_the_declared_math():
    torch.manual_seed(0)
    layer = OAttention(8, 2, tau=0.7, eps_den=1e-3).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    params = dict(wq=layer.wq, bq=layer.bq, wk=layer.wk, bk=layer.bk, wv=layer.wv, bv=layer.bv, wo=layer.wo,
                  heads=2, tau=0.7, eps_den=1e-3)
    assert torch.equal(layer(x), default_registry()["oattention"].fn(TORCH, x, **params))
    s = SDPAttention(8, 2).double()
    assert torch.equal(s(x), sdpa(TORCH, x, None, wq=s.wq, bq=s.bq, wk=s.wk, bk=s.bk, wv=s.wv, bv=s.bv, wo=s.wo, heads=2))


def test_pn_fir_tau_tau_is_learnable_and_gets_gradient():
    torch.manual_seed(0)
    layer = FIRAttention(8, 2, variant="pn_fir_tau", tau=-0.2).double()
    assert isinstance(layer.tau, torch.nn.Parameter)
    layer(torch.randn(1, 6, 8, dtype=torch.float64)).sum().backward()
    assert layer.tau.grad is not None and layer.tau.grad != 0


def test_host_depth_is_configurable_and_otransformer_keeps_nulls_null():
    torch.manual_seed(0)
    for depth in (1, 3):
        h = Host(8, 2, depth=depth, kind="otransformer").double()
        assert len(h.blocks) == depth
        x = torch.randn(1, 4, 8, dtype=torch.float64)
        x[0, 2] = 0
        assert (h(x)[0, 2] == 0).all()


def test_silent_pn_fir_tau_head_outputs_exact_zero():
    torch.manual_seed(0)
    layer = FIRAttention(8, 2, variant="pn_fir_tau", tau=1e6).double()   # no score exceeds tau
    assert (layer(torch.randn(1, 5, 8, dtype=torch.float64)) == 0).all()
