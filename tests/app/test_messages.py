"""The messages a new user meets (issue 21, point 10): each names what the user passed and shows what was found."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.modules import Block, Host, OAttention

X9 = torch.randn(1, 4, 9, dtype=torch.float64)
X8 = torch.randn(1, 4, 8, dtype=torch.float64)


def _wrong_gamma():
    host = Host(8, 2, depth=2).double()
    host.blocks[1].norm1.gamma = nn.Parameter(torch.ones(9, dtype=torch.float64))
    return host


def _wrong_wq():
    layer = OAttention(8, 2).double()
    layer.wq = nn.Parameter(torch.ones(8, 9, dtype=torch.float64))
    return layer


@pytest.mark.parametrize("build, x, message", [
    (lambda: Host(8, 2, depth=2).double(), X9, "x: expected 8 features (the layer's d_model), got 9"),
    (lambda: OAttention(8, 2).double(), X9, "x: expected 8 features (the layer's d_model), got 9"),
    (lambda: Block(8, 2).double(), X9, "h: expected 8 features (the layer's d_model), got 9"),
    (_wrong_gamma, X8, "blocks[1].norm1.gamma: expected shape (8,) for d_model 8, got (9,)"),
    (_wrong_wq, X8, "wq: expected shape (8, 8) for d_model 8, got (8, 9)"),
], ids=["host-x", "oattention-x", "block-h", "host-param-path", "layer-param"])
def test_a_module_names_the_argument_the_user_passed(build, x, message):
    with pytest.raises(InvalidArgument) as err:
        build()(x)
    assert str(err.value).startswith(message), str(err.value)


def test_a_correct_module_call_is_accepted():
    assert Host(8, 2, depth=2).double()(X8).shape == X8.shape
    assert OAttention(8, 2).double()(X8).shape == X8.shape


def test_the_mask_error_shows_the_value_found():
    x = torch.randn(1, 3, 4)
    m = torch.ones(3, 3)
    m[1, 2] = 0.25
    with pytest.raises(InvalidArgument) as err:
        arguments.mask(m, x)
    assert str(err.value) == "mask: entries must be 0 or 1 exactly (1 = visible), got 0.25 at [1, 2]"
    m[2, 0] = float("nan")
    with pytest.raises(InvalidArgument, match=r"got 0\.25 at \[1, 2\] \(2 entries are neither 0 nor 1\)"):
        arguments.mask(m, x)
    assert arguments.mask(torch.tril(torch.ones(3, 3)), x) is not None
