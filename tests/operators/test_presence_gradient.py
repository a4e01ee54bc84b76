"""Presence's backward at a tiny tau: exactly 0 at a null token, the float64 gradient elsewhere.

The chain rule through s = |h|^2 multiplies dr/ds = 1/tau (past float32's range at tau = 1e-35 once the
upstream gradient passes ~3e3) by ds/dh = 2h = 0: NaN at the null token (oattention, null_gradient, float32,
seed 2 of the default check).  ``xp.norm_ratio`` takes the gradient in h as one bounded product.
"""
import torch
from torch.autograd import gradcheck, gradgradcheck

from tokenlaw.operators.ordered_xp import ORDERED
from tokenlaw.operators.presence import presence
from tokenlaw.operators.xp import TORCH

TAU = 1e-35                      # the drawn tau of the seed-2 counterexample (in float32's decades)
UPSTREAM = 5e3                   # 5e3 / 1e-35 overflows float32


def _tokens(dtype):
    # a null token, one whose |h|^2 underflows float32 (1e-40), one at |h|^2 = tau, two ordinary ones
    rows = [[0.0, 0.0, 0.0], [1e-20, 0.0, 0.0], [TAU ** 0.5, 0.0, 0.0], [1.0, -2.0, 0.5], [3e2, 1e3, -7.0]]
    return torch.tensor([rows], dtype=torch.float64).to(dtype)


def _gradient(xp, h, tau):
    h = h.clone().requires_grad_(True)
    (g,) = torch.autograd.grad((presence(xp, h, tau=tau) * UPSTREAM).sum(), h)
    return g


def _chain_rule_formula(h, tau):
    """The formula differentiated by autograd through |h|^2 (the backward before the fix)."""
    sq = (h * h).sum(-1, keepdim=True)
    return sq / (tau + sq)


def test_null_token_gradient_is_exactly_zero_at_a_tiny_tau():
    for xp in (TORCH, ORDERED):
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            g = _gradient(xp, _tokens(dtype), TAU)
            assert torch.isfinite(g).all(), (xp.name, dtype, g)
            assert torch.equal(g[0, 0], torch.zeros_like(g[0, 0])), (xp.name, dtype, g[0, 0])


def test_the_chain_rule_formula_is_nan_there():
    """The counterexample still breaks the formula differentiated through |h|^2: the test above can fail."""
    h = _tokens(torch.float32).requires_grad_(True)
    (g,) = torch.autograd.grad((_chain_rule_formula(h, TAU) * UPSTREAM).sum(), h)
    assert torch.isnan(g[0, 0]).all()


def test_float32_gradient_matches_float64_where_autograd_overflowed():
    """Off the null the float32 gradient is the float64 one to float32's rounding (a few ulp relative),
    including the token whose |h|^2 underflows (the true gradient 2h / tau there, 2e10 times the upstream)."""
    h = _tokens(torch.float32)
    exact = _gradient(TORCH, h.double(), TAU)
    low = _gradient(TORCH, h, TAU).double()
    # a few roundings of each token's largest entry, and a few of float32's subnormal spacing 2^-149 where
    # the gradient itself is below the normal range (the last token's, ~1e-41)
    allowed = 8 * torch.finfo(torch.float32).eps * exact.abs().amax(dim=-1, keepdim=True) + 8 * 2.0 ** -149
    assert ((low - exact).abs() <= allowed).all(), (low, exact)
    assert (low[0, 1:, 0] != 0).all()


def test_backward_is_the_derivative_in_float64():
    h = torch.randn(2, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    h[0, 1] = 0.0
    tau = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    for xp in (TORCH, ORDERED):
        assert gradcheck(lambda x, t: presence(xp, x, tau=t), (h.clone().requires_grad_(True), tau))
        assert gradgradcheck(lambda x: presence(xp, x, tau=0.3), (h.clone().requires_grad_(True),))


def test_forward_is_the_formula_bit_for_bit():
    g = torch.Generator().manual_seed(2)
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16):
        h = (torch.randn(3, 5, 4, generator=g, dtype=torch.float64) * 10.0).to(dtype)
        h[0, 2] = 0.0
        tau = 0.25
        assert torch.equal(presence(TORCH, h, tau=tau), _chain_rule_formula(h, tau))
