"""``xp.excess``: the eager namespace's sorted sums equal the definition the symbolic namespaces trace.

    e_j = sum_l m_l (z_l - z_j)_+^p        (p = 1, 2; the zoo's sparsemax / entmax-1.5 support test)

The symbolic namespaces state it term by term (``symbolic.objarray``); the eager one groups the same
terms by one sort (``operators.xp.TorchNamespace.excess``).  Both are sums of nonnegative terms, so each
is within gamma_k * e of the exact value (Higham: k roundings along any summation order, gamma_k =
k u / (1 - k u)): the definition below takes 3 + N roundings an entry (difference, power, weight,
a sum of N terms); the sorted form 1 (gap) + N (the running weight) + N (first cumsum) + 4 (the
square's products and sum) + N (second cumsum), at most 3N + 5.  So the two agree within
gamma_{4N + 8} * e; the seeded slips below break that bound by orders of magnitude.
"""
from __future__ import annotations

import fractions

import numpy as np
import pytest
import sympy
import torch

from tokenlaw.operators.xp import TORCH, TorchNamespace
from tokenlaw.symbolic.objarray import objects
from tokenlaw.symbolic.sympy_ns import SYMPY


def definition(z, m, p):
    """The law written plainly, all pairs at once in float64."""
    d = (z.double()[..., None, :] - z.double()[..., :, None]).clamp(min=0) * m.double()[..., None, :]
    return (d ** p).sum(-1)


def _bound(e, n, dtype=torch.float64):
    u = torch.finfo(dtype).eps / 2
    k = 4 * n + 8
    return k * u / (1 - k * u) * e


def _cases(seed, count=120):
    g = torch.Generator().manual_seed(seed)
    for t in range(count):
        n = [1, 2, 3, 7, 40, 130][t % 6]
        scale = 10.0 ** int(torch.randint(-4, 5, (1,), generator=g))
        z = torch.randn(2, 3, n, generator=g, dtype=torch.float64) * scale
        if t % 4 == 0:
            z = torch.round(z / scale * 2) * scale          # ties, many of them
        m = (torch.rand(2, 3, n, generator=g) > [0.0, 0.3, 0.9][t % 3]).double()
        yield z, m


@pytest.mark.parametrize("power", [1, 2])
def test_sorted_sums_equal_the_definition_in_float64(power):
    """Shapes 1..130, masks from none to most keys hidden, ties, magnitudes 1e-4..1e4."""
    for z, m in _cases(power):
        got, want = TORCH.excess(z, m, power), definition(z, m, power)
        assert got.shape == z.shape and got.dtype == torch.float64
        assert bool(((got - want).abs() <= _bound(want, z.shape[-1])).all()), (z, m)


class _Slipped(TorchNamespace):
    """The sorted sums with one seeded slip each: the bound above must see every one."""

    def __init__(self, slip):
        self.slip = slip

    def excess(self, z, m, power):
        zs, order = torch.sort(z, dim=-1, descending=True, stable=True)
        ms = torch.gather(torch.broadcast_to(m, z.shape), -1, order)
        start = torch.zeros_like(zs[..., :1])
        gap = torch.cat([start, zs[..., :-1] - zs[..., 1:]], dim=-1)
        cum = torch.cumsum(ms, dim=-1)
        above = cum if self.slip == "inclusive weight" else torch.cat([start, cum[..., :-1]], dim=-1)
        e = torch.cumsum(gap * above, dim=-1)
        if power == 2:
            before = e if self.slip == "current E1" else torch.cat([start, e[..., :-1]], dim=-1)
            cross = 0.0 if self.slip == "no cross term" else 2.0 * before
            e = torch.cumsum(gap * (cross + gap * above), dim=-1)
        if self.slip == "unsorted back by gather":
            return torch.gather(e, -1, order)
        return torch.empty_like(e).scatter_(-1, order, e)


@pytest.mark.parametrize("slip,power", [("inclusive weight", 1), ("current E1", 2), ("no cross term", 2),
                                        ("unsorted back by gather", 1)])
def test_a_seeded_slip_breaks_the_bound(slip, power):
    bad = _Slipped(slip)
    worst = 0.0
    for z, m in _cases(7, count=24):
        got, want = bad.excess(z, m, power), definition(z, m, power)
        worst = max(worst, float(((got - want).abs() / (_bound(want, z.shape[-1]) + 1e-300)).max()))
    assert worst > 1e3, (slip, worst)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_lower_precisions_sum_in_float32_at_least(dtype):
    """The input's own values, summed in float32 (float16/bfloat16 running weights are exact only to
    2048/256 keys): within the float32 bound of the definition of those same values, at N = 300."""
    g = torch.Generator().manual_seed(3)
    z = (torch.randn(2, 4, 300, generator=g) * 3).to(dtype)
    m = (torch.rand(2, 4, 300, generator=g) > 0.2).to(dtype)
    for power in (1, 2):
        got, want = TORCH.excess(z, m, power), definition(z, m, power)
        assert got.dtype == torch.float32
        assert bool(((got.double() - want).abs() <= _bound(want, 300, torch.float32)).all())


def test_an_overflowed_sum_is_inf_not_nan():
    """float32 scores spread to 3e38: gaps overflow the sums; a tie after them must not turn NaN
    (0 * inf), and the keys near the top keep their finite excess."""
    z = torch.tensor([[0.0, -1.0, -3e38, -3e38, -3e38]])
    e = TORCH.excess(z, torch.ones_like(z), 2)
    assert not e.isnan().any()
    assert e[0, 0] == 0 and e[0, 1] == 1 and torch.isinf(e[0, 2:]).all()


def test_nothing_is_differentiated_through_it():
    z = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    assert not TORCH.excess(z, torch.ones_like(z), 2).requires_grad


@pytest.mark.parametrize("power", [1, 2])
def test_the_symbolic_definition_is_the_same_function(power):
    """The sympy namespace's excess at exact rational points (ties included) equals the eager sorted
    sums within their float64 bound: the two namespaces implement one primitive."""
    g = torch.Generator().manual_seed(11)
    for _ in range(6):
        z = torch.round(torch.randn(2, 5, generator=g, dtype=torch.float64) * 4) / 4
        m = (torch.rand(2, 5, generator=g) > 0.3).double()
        exact = SYMPY.excess(objects((2, 5), lambda i: sympy.Rational(fractions.Fraction(float(z[i])))),
                             objects((2, 5), lambda i: sympy.Integer(int(m[i]))), power)
        want = torch.tensor(np.vectorize(lambda v: float(sympy.sympify(getattr(v, "t", v))))(exact).astype(float))
        got = TORCH.excess(z, m, power)
        assert bool(((got - want).abs() <= _bound(want, 5)).all())
