"""The systematic-bias part of ``differential`` (properties/tolerance.py, *Systematic bias*): a coherent error
just above its derived bound is caught, a bound twice too wide lets it through, and a correct output whose
rounding is as coherent as rounding can be (every row the same vector, every entry rounded the same way by
almost u_D) is not flagged."""
from __future__ import annotations

import pytest
import torch

from tokenlaw.properties import tolerance as T
from tokenlaw.properties.tolerance import BOUND_FRACTION, differential

HALVES = (torch.float16, torch.bfloat16)
PLANT = 1.1          # planted bias, times the bound


def _u(dt):
    return torch.finfo(dt).eps / 2


def _attention(dt, rows=48, keys=24, width=16, seed=0):
    """softmax(S) V in ``dt``, from float64 inputs (each run rounds them to its own dtype)."""
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(rows, keys, generator=g, dtype=torch.float64) * 3
    v = torch.randn(keys, width, generator=g, dtype=torch.float64)
    return (torch.softmax(s.to(dt), -1) @ v.to(dt)).double()


def _judged(dtype, aD, seed=0):
    a64 = _attention(torch.float64, seed=seed)
    probes = {torch.float32: _attention(torch.float32, seed=seed)}
    return differential(aD, a64, probes, dtype, bias=True)


@pytest.mark.parametrize("dtype", HALVES)
def test_a_correct_half_output_is_within_its_bias_bound(dtype):
    c = _judged(dtype, _attention(dtype))
    assert c.ok and 0 < c.bias_bound <= BOUND_FRACTION, (c.bias, c.bias_bound)
    # the bound is about D's final rounding u_D plus the probes' scaled bias: a few roundoffs, not K of them
    assert c.bias_bound < 4 * _u(dtype), c.bias_bound


def _planted(dtype, factor, judge=None):
    """The correct half output scaled (in float64, so nothing rounds the plant away) until its bias is
    ``factor`` times its bound (the bound's own growth with the scale, (1 + c) u_D, is followed by iterating)."""
    aD = _attention(dtype)
    base = _judged(dtype, aD)
    a64 = _attention(torch.float64)
    beta0 = float(((aD - a64) * a64).sum() / (a64 * a64).sum())
    sign = 1.0 if beta0 >= 0 else -1.0
    c, scale = base, 0.0
    for _ in range(4):
        scale = sign * (factor * c.bias_bound - abs(beta0)) / (1 + beta0 * sign)
        c = _judged(dtype, aD * (1 + scale))
    return (c if judge is None else judge(aD * (1 + scale))), scale


@pytest.mark.parametrize("dtype", HALVES)
def test_a_coherent_scale_just_above_the_bias_bound_is_caught_and_just_below_passes(dtype):
    above, scale = _planted(dtype, PLANT)
    assert not above.ok and 1 < above.bias_ratio < PLANT * 1.02, above.bias_ratio
    # the normwise bound alone passes it: the bias is what sees the scale
    assert above.ratio <= 1, above.ratio
    below, _ = _planted(dtype, 1 / PLANT)
    assert below.ok and below.bias_ratio < 1, below.bias_ratio
    assert abs(scale) < 4 * _u(dtype)


def test_a_bias_bound_twice_too_wide_fails_the_planted_check(monkeypatch):
    """The check above attacked: every bias bound doubled lets the planted scale through."""
    original = T.bias_bound

    def doubled(dtype):
        def judge(aD):
            with monkeypatch.context() as m:
                m.setattr(T, "bias_bound", lambda *a, **k: 2 * original(*a, **k))
                return _judged(dtype, aD)
        return judge

    for dtype in HALVES:
        above, _ = _planted(dtype, PLANT, judge=doubled(dtype))
        assert above.ok, above.bias_ratio


@pytest.mark.parametrize("dtype", HALVES)
def test_every_row_the_same_vector_rounded_down_by_almost_u_is_not_flagged(dtype):
    """The most coherent rounding a correct operator can make: every row the same vector, each entry just under
    half a spacing above D's grid (exact in float32, so the probe's bias is 0 and predicts nothing), rounded
    down by almost u_D relative.  Only the rigorous final-rounding part of the bound covers it, and does."""
    g = torch.Generator().manual_seed(3)
    grid = (1 + torch.rand(32, generator=g, dtype=torch.float64) / 16).to(dtype).double()
    spacing = torch.finfo(dtype).eps                 # D's spacing on [1, 2)
    v = grid + spacing * (0.5 - 2.0 ** -8)            # exact in float32: 11 + 8 < 24 bits
    a64 = v.repeat(40, 1)
    aD = a64.to(dtype).double()
    assert torch.equal(a64.float().double(), a64)
    c = differential(aD, a64, {torch.float32: a64.float()}, dtype, bias=True)
    assert c.ok, (c.bias, c.bias_bound)
    assert c.bias_ratio > 0.9, c.bias_ratio            # as coherent as it gets: the bound is nearly tight
    # and a bound that left the final rounding out (only the probes' bias, here 0) would flag it
    assert c.bias > 0.9 * _u(dtype)


def test_the_bias_is_not_judged_where_its_bound_passes_a_sixteenth_or_float64_is_zero():
    a64 = torch.zeros(4, 3, dtype=torch.float64)
    c = differential(a64, a64, {torch.float32: a64.float()}, torch.float16, bias=True)
    assert c.bias_bound == 0 and c.bias_ratio == 0 and c.ok
    a64 = torch.ones(4, 3, dtype=torch.float64)
    # a probe biased by 0.5 % in float32 predicts a float16 bias of 8 * 0.005 * 2^13: no decision on the bias
    c = differential(a64 * 1.5, a64, {torch.float32: (a64 * 1.005).float()}, torch.float16, bias=True)
    assert c.bias_bound == 0 and c.bias_ratio == 0
    # the normwise comparison is outside its first-order model too (judged by differential_laws._judge)
    assert c.predicted_relative > BOUND_FRACTION


def test_float32_and_float64_are_not_judged_on_their_bias():
    """Their probes are coarser than D (float32's halves) or it is float64: module docstring."""
    a64 = _attention(torch.float64)
    for dtype, probe in ((torch.float32, torch.float16), (torch.float64, torch.float32)):
        c = differential(a64 * (1 + 1e-6), a64, {probe: _attention(probe)}, dtype, bias=True)
        assert c.bias_bound == 0
