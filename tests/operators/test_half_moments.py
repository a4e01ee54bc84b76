"""float16 overflows in the scores' product and the norms' second moments (issue 19, fixes).

Each case replays a counterexample of the default check (seeds 0-2) through the contract that
failed it, and fails on the pre-fix code:

* pn_fir_tau, tau = 65504, n = 1: the score laws build S = tau + (at most 1) and read the weights
  off the operator's output through the one-hot probe.  The probe's q = s * sqrt(D) and the plain
  <q, k> are s sqrt(D), past 65504, so S was +inf, S - tau = +inf and the row got weight 1 (mass 1)
  where every S - tau <= 0 (silent).  The scores are now <q, p k> * r (projections.score_scales)
  with sqrt(D) in the probe's keys: no intermediate exceeds |S|.
* layernorm, scale 100, d = 8: c = x - mu reaches 258, c^2 = 66600 > 65504, var = inf and the
  output c / sqrt(inf) = 0 where float64's is O(1).  Now retaken over c / max|c| (spread.standardised).
"""
from __future__ import annotations

import math

import pytest
import torch

from tokenlaw.operators import projections
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, default_registry

REG = default_registry()
X_TAU = (0.39229682477920974, -0.22356401839813858, -0.31950026476687593, -1.2050371108761633)
X_LN = (100.79157977705175, 2.7019420274973895, 198.13229069964842, 62.952237753106935,
        -241.37740666298492, 19.93960424786774, -98.06054646857011, 89.43415686409165)


@pytest.mark.parametrize("contract", ["gate_below_one", "silence"])
@pytest.mark.parametrize("tau", [65504.0, -65504.0, 1e4])
def test_pn_fir_tau_huge_tau_float16(contract, tau):
    # tau = 1e4 at n = 9: the probe's D = 64, q = 8 s = 8e4 overflowed as well
    for n in (1, 9):
        v = CONTRACTS[contract](Case(op=REG["pn_fir_tau"], dtype=torch.float16, n=n, d=4, seed=0, tau=tau))
        assert v.status == "holds", (n, v.detail)


def test_pn_fir_tau_silence_at_the_lowest_tau_float16():
    # seed 2's counterexample: tau = -65504, scale 10; the law's S = tau - |scores| was -inf in float16
    v = CONTRACTS["silence"](Case(op=REG["pn_fir_tau"], dtype=torch.float16, n=7, d=4, seed=0, scale=10.0,
                                  tau=-65504.0))
    assert v.status == "holds", v.detail


def test_pn_fir_tau_silent_and_limit_weights_through_the_probe():
    """Both signs of a huge tau through the operator's own output: +: silent; -: the limit 1/#visible."""
    from tokenlaw.operators.fir_attention import causal_mask
    from tokenlaw.properties.applied import applied_weights
    op = REG["pn_fir_tau"]
    for n in (1, 3, 9):
        s = torch.full((1, n, n), 0.25, dtype=torch.float16)
        mask = causal_mask(TORCH, s, n)
        above = applied_weights(op, TORCH, s + 65504.0 - 0.25, mask, tau=65504.0)
        assert float(above.abs().max()) == 0.0
        below = applied_weights(op, TORCH, s, mask, tau=-65504.0).double()
        # S - tau = 65504.25 for every visible key: equal weights 1 / (t + 1), gate 1 to float16's precision
        want = torch.tril(torch.ones(n, n, dtype=torch.float64)) / torch.arange(1, n + 1, dtype=torch.float64)[:, None]
        assert float((below[0] - want).abs().max()) <= 2.0 ** -10


def test_scores_bits_unchanged_and_finite_where_s_is():
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        for dh in (1, 2, 3, 4, 5, 8, 16, 31, 64, 128):
            q = torch.randn(2, 2, 5, dh, generator=g, dtype=torch.float64).to(dtype)
            k = torch.randn(2, 2, 6, dh, generator=g, dtype=torch.float64).to(dtype)
            plain = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(dh))
            assert torch.equal(projections.scores(TORCH, q, k), plain), (dtype, dh)
    # the control: |S| = 6e4 at dh = 16 is representable; <q, k> = 2.4e5 is not
    q = torch.full((1, 1, 1, 16), 240.0, dtype=torch.float16)
    k = torch.full((1, 1, 1, 16), 62.5, dtype=torch.float16)
    assert not bool(torch.isfinite(torch.matmul(q, k.transpose(-1, -2))).all())
    assert float(projections.scores(TORCH, q, k)) == 60000.0


@pytest.mark.parametrize("name", ["layernorm", "rmsnorm"])
def test_norms_float16_second_moment_past_65504(name):
    x = torch.tensor([[X_LN]], dtype=torch.float64) * 1.25    # |x| <= 302: x^2 and c^2 past 65504
    ones, zeros = torch.ones(8, dtype=torch.float64), torch.zeros(8, dtype=torch.float64)
    want = REG[name].fn(TORCH, x, gamma=ones, beta=zeros)
    got = REG[name].fn(TORCH, x.half(), gamma=ones.half(), beta=zeros.half()).double()
    # a handful of float16 roundings of an O(1) output (|out| < 2.1): well under 2^-7
    assert float((got - want).abs().max()) <= 2.0 ** -7


def test_layernorm_differential_float16_counterexample():
    case = Case(op=REG["layernorm"], dtype=torch.float16, n=1, d=8, seed=2, scale=100.0)
    v = CONTRACTS["differential"](case)
    assert v.status == "holds", v.detail


def test_ostandardize_float16_weighted_moment_past_65504():
    # tokens at +-300 (d = 1): |h|^2 = 9e4 (presence) and var = 9e4 past 65504, outputs ~ +-1;
    # the null token stays exactly 0
    x = torch.tensor([[[-300.0], [300.0], [0.0], [-300.0], [300.0], [310.0], [-290.0]]], dtype=torch.float64)
    want = REG["ostandardize"].fn(TORCH, x, tau=0.5, eps=1e-5)
    got = REG["ostandardize"].fn(TORCH, x.half(), tau=0.5, eps=1e-5).double()
    assert bool(torch.isfinite(got).all()) and float(got[0, 2].abs()) == 0.0
    assert float((got - want).abs().max()) <= 2.0 ** -7


@pytest.mark.parametrize("name", ["onorm_ln", "onorm_rms"])
def test_onorms_float16_presence_past_65504(name):
    # seed 1's counterexample of onorm_ln-differential (d = 1, scale 100): a token past |h| = 256
    x = torch.tensor([[[-300.0], [40.0], [0.0], [270.0]]], dtype=torch.float64)
    g, b = torch.tensor([1.5], dtype=torch.float64), torch.tensor([0.25], dtype=torch.float64)
    want = REG[name].fn(TORCH, x, gamma=g, beta=b, tau=0.5)
    got = REG[name].fn(TORCH, x.half(), gamma=g.half(), beta=b.half(), tau=0.5).double()
    assert bool(torch.isfinite(got).all()) and float(got[0, 2].abs()) == 0.0
    assert float((got - want).abs().max()) <= 2.0 ** -7
    # presence itself: rho -> 1 - tau / |h|^2, not inf / inf
    rho = REG["presence"].fn(TORCH, x.half(), tau=0.5).double()
    assert float((rho - REG["presence"].fn(TORCH, x, tau=0.5)).abs().max()) <= 2.0 ** -11


def test_standardize_two_far_tokens_float16_seed4():
    """The default check, seed 4: standardize over two tokens -195.1, 322.3 (scale 100, d = 8) in float16.
    The centred values are +-258.7 and their mean of squares 66900 overflowed: 0 for +-1.  Now retaken over
    c / max|c| (spread.standardised) like the norms."""
    case = Case(op=REG["standardize"], dtype=torch.float16, seed=255, batch=2, n=2, d=8, scale=100.0)
    assert [round(v, 3) for v in case.x[1, :, 4].tolist()] == [-195.089, 322.348]
    v = CONTRACTS["differential"](case)
    assert v.status == "holds" and v.ratio > 0, v.detail
