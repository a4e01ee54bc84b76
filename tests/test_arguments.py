"""Bad input raises InvalidArgument naming the argument; nothing is silently broadcast."""
from __future__ import annotations

import pytest
import torch

from tokenlaw.operators import InvalidArgument, TORCH
from tokenlaw.operators.fir_attention import pn_fir_tau
from tokenlaw.operators.modules import FIRAttention, Host, OAttention
from tokenlaw.operators.oattention import oattention, oattention_params
from tokenlaw.operators.ostandardize import ostandardize
from tokenlaw.operators.presence import presence_op


@pytest.fixture
def p():
    return oattention_params(torch.Generator().manual_seed(0), 4)


def x3(n=3, d=4, dtype=torch.float64):
    return torch.randn(2, n, d, dtype=dtype)


@pytest.mark.parametrize("bad, arg", [
    (torch.randn(3, 4, dtype=torch.float64), "x: expected 3 dims"),
    (torch.randn(1, 2, 3, 4, dtype=torch.float64), "x: expected 3 dims"),
    (torch.randn(2, 3, 5, dtype=torch.float64), "wq: expected shape"),
    (torch.ones(2, 3, 4, dtype=torch.int64), "x: expected a floating dtype"),
    (torch.zeros(2, 0, 4, dtype=torch.float64), "x: needs at least one token"),
])
def test_bad_tokens(p, bad, arg):
    with pytest.raises(InvalidArgument, match=arg):
        oattention(TORCH, bad, **p)


@pytest.mark.parametrize("tau", [0.0, -1.0, float("nan"), float("inf")])
def test_tau_must_be_positive(p, tau):
    with pytest.raises(InvalidArgument, match="tau: must be > 0"):
        oattention(TORCH, x3(), **{**p, "tau": tau})
    with pytest.raises(InvalidArgument, match="tau: must be > 0"):
        presence_op(TORCH, x3(), tau=tau)
    with pytest.raises(InvalidArgument, match="tau: must be > 0"):
        ostandardize(TORCH, x3(), tau=tau)


@pytest.mark.parametrize("eps", [0.0, -1e-6])
def test_eps_den_must_be_positive(p, eps):
    with pytest.raises(InvalidArgument, match="eps_den: must be > 0"):
        oattention(TORCH, x3(), **{**p, "eps_den": eps})


@pytest.mark.parametrize("mask, arg", [
    (torch.ones(3, 4), "mask: expected shape"),
    (torch.ones(3, 3, 3), "mask: expected shape"),
    (torch.full((3, 3), 0.5), "mask: entries must be 0 or 1"),
    (torch.ones(2, 3, 3, dtype=torch.complex64), "mask: expected bool or 0/1"),
])
def test_bad_mask(p, mask, arg):
    with pytest.raises(InvalidArgument, match=arg):
        oattention(TORCH, x3(), mask, **p)


def test_bool_mask_accepted(p):
    m = torch.ones(3, 3, dtype=torch.bool)
    out = oattention(TORCH, x3(), m, **p)
    assert out.shape == (2, 3, 4)


def test_heads_must_divide_width(p):
    with pytest.raises(InvalidArgument, match="heads: 3 does not divide the model width 4"):
        oattention(TORCH, x3(), **{**p, "heads": 3})


def test_carrier_shape_checked(p):
    with pytest.raises(InvalidArgument, match="carrier: expected"):
        oattention(TORCH, x3(), carrier=torch.randn(2, 4, 4, dtype=torch.float64), **p)


def test_pn_fir_tau_rejects_non_finite_tau():
    from tokenlaw.operators.fir_attention import tau_params
    p = tau_params(torch.Generator().manual_seed(0), 4)
    with pytest.raises(InvalidArgument, match="tau: must be finite"):
        pn_fir_tau(TORCH, x3(), **{**p, "tau": float("inf")})


def test_modules_validate_up_front():
    with pytest.raises(InvalidArgument, match="tau"):
        OAttention(8, 2, tau=0.0)
    with pytest.raises(InvalidArgument, match="heads"):
        OAttention(8, 3)
    with pytest.raises(InvalidArgument, match="variant"):
        FIRAttention(8, 2, variant="nope")
    with pytest.raises(InvalidArgument, match="backend"):
        OAttention(8, 2, backend="cuda-magic")
    with pytest.raises(InvalidArgument, match="depth"):
        Host(8, 2, depth=0)
    with pytest.raises(InvalidArgument, match="kind"):
        Host(8, 2, kind="nope")
