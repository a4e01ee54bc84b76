"""A LayerNorm centres its input in the dtype under test without losing the spread to the mean's rounding.

The default check, seed 2, oa_only_host-differential bfloat16 (n = 2, d = 2, bias scale 10, causal):
after the first attention sub-layer a row's state is [5.997, 5.968] in float64, [6.0, 5.969] in
bfloat16.  The next LayerNorm's mean, 5.984, rounded to bfloat16 (spacing 1/32 on [4, 8)) lands on
one of the two entries, so x - mean held [0, -0.031] instead of [0.016, -0.016] and the norm
returned [0, -1.4] for [0.98, -0.98]: the host's output was off by 8 where float64 and float16 agree
to 3 digits.  ``xp.centred`` takes the mean's rounding back out (a second pass on the exact
differences).
"""
from __future__ import annotations

import pytest
import torch

from tokenlaw.operators.norms import layer_norm
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS, default_registry

X_HOST = ((-1.6913367568802622, 0.06723136988041024), (0.7572340061786584, 0.34100272683653754))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_layer_norm_of_a_tight_state_keeps_its_sign_and_size(dtype):
    x = torch.tensor([6.0, 5.96875], dtype=dtype)
    ones, zeros = torch.ones(2, dtype=dtype), torch.zeros(2, dtype=dtype)
    out = layer_norm(TORCH, x, gamma=ones, beta=zeros).double()
    exact = layer_norm(TORCH, x.double(), gamma=ones.double(), beta=zeros.double())
    assert float((out - exact).abs().max()) < 0.02, (out, exact)          # |exact| = 0.9869


def test_one_pass_centring_loses_it():
    """The control: the old one-pass centring on the same bfloat16 state (so the test can fail)."""
    x = torch.tensor([6.0, 5.96875], dtype=torch.bfloat16)
    c = x - x.mean(-1, keepdim=True)
    assert 0.0 in c.tolist()


def test_oa_only_host_differential_bfloat16_seed2():
    op = default_registry()["oa_only_host"]
    case = Case(op=op, dtype=torch.bfloat16, seed=910, batch=1, n=2, d=2, bias_scale=10.0, mask_kind="causal")
    assert case.x.tolist() == [[list(r) for r in X_HOST]]
    v = CONTRACTS["differential"](case)
    assert v.status == "holds" and v.ratio > 0, v.detail

