"""Bad input raises InvalidArgument naming the argument; nothing is silently broadcast."""
from __future__ import annotations

import re

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
    with pytest.raises(InvalidArgument, match="implementation"):
        OAttention(8, 2, implementation="cuda-magic")
    with pytest.raises(InvalidArgument, match="implementation"):
        FIRAttention(8, 2, implementation="triton")
    with pytest.raises(InvalidArgument, match="implementation"):
        Host(8, 2, kind="standard", implementation=lambda *a, **k: None)
    with pytest.raises(InvalidArgument, match="depth"):
        Host(8, 2, depth=0)
    with pytest.raises(InvalidArgument, match="kind"):
        Host(8, 2, kind="nope")


@pytest.mark.parametrize("make, call, arg", [
    (lambda: OAttention(8, 2), lambda m: m(torch.full((1, 3, 8), float("nan"))), "x"),
    (lambda: OAttention(8, 2), lambda m: m(torch.randn(1, 3, 8, dtype=torch.float64)), "wq"),
    (lambda: OAttention(8, 2), lambda m: m(torch.randn(1, 3, 8), torch.full((3, 3), 0.1)), "mask"),
    (lambda: OAttention(8, 2), lambda m: m(torch.randn(1, 3, 8), carrier=torch.randn(1, 2, 8)), "carrier"),
    (lambda: OAttention(8, 2, tau=torch.ones(1, 1, 1, 1)), None, "tau"),
    (lambda: OAttention(8, 2, tau=True), None, "tau"),
    (lambda: OAttention(8, 2, tau="1"), None, "tau"),
    (lambda: FIRAttention(8, 2, tau=[0.1]), None, "tau"),
    (lambda: Host(8, 2, depth=1), lambda m: m(torch.full((1, 3, 8), float("inf"))), "x"),
    (lambda: Host(8, 2, depth=1), lambda m: m(torch.randn(1, 3, 8).to("meta")), "x"),
])
def test_modules_reject_bad_input_naming_it(make, call, arg):
    with pytest.raises(InvalidArgument, match=rf"^{arg}: "):
        module = make()
        call(module)


def test_host_hidden_states_may_overflow_without_being_called_bad_input():
    """Inside a host the hidden states are the model's own: a float16 overflow there is a result, not an error."""
    host = Host(8, 2, depth=2).half()
    with torch.no_grad():
        for p in host.parameters():
            p.mul_(300.0)
    out = host(torch.randn(1, 3, 8).half() * 200)
    assert not torch.isfinite(out).all()      # the model overflowed; no InvalidArgument was raised for it


def test_int_masks_of_every_width_are_accepted_alike(p):
    x = x3()
    ref = oattention(TORCH, x, torch.tril(torch.ones(3, 3, dtype=torch.bool)), **p)
    for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float32):
        assert torch.equal(oattention(TORCH, x, torch.tril(torch.ones(3, 3, dtype=dtype)), **p), ref), dtype


def _poisoned(module, path):
    with torch.no_grad():
        module.get_parameter(path).view(-1)[0] = float("nan")
    return module


@pytest.mark.parametrize("make, path, named", [
    (lambda: Host(8, 2, depth=2), "blocks.1.attn.wk", "blocks[1].attn.wk"),
    (lambda: Host(8, 2, depth=2, kind="standard"), "blocks.0.ffn.w1", "blocks[0].ffn.w1"),
    (lambda: Host(8, 2, depth=2, kind="standard"), "blocks.1.ffn.b1", "blocks[1].ffn.b1"),
    (lambda: OAttention(8, 2), "wq", "wq"),
])
def test_a_non_finite_parameter_is_named_once_at_the_module_input(make, path, named):
    """A composition checks its parameters' values once, at its input (check_parameters); its blocks then
    run composed and skip that check, so a NaN weight deep in a host must still be refused, by its path."""
    module = _poisoned(make(), path)
    with pytest.raises(InvalidArgument, match=rf"^{re.escape(named)}: contains NaN"):
        module(torch.randn(1, 3, 8))


@pytest.mark.parametrize("bad", [0, -1, True, 1.0, "2", None])
def test_a_count_is_an_int_of_at_least_one(bad):
    from tokenlaw.operators import arguments

    with pytest.raises(InvalidArgument, match=r"^workers: expected an int >= 1"):
        arguments.count(bad, "workers")
    assert arguments.count(3, "workers") == 3


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_finite_asks_the_sum_first_and_decides_as_the_entrywise_check(dtype):
    """A large tensor's finite sum proves it finite; a NaN or inf anywhere, or finite entries whose sum
    overflows, still get the entrywise answer."""
    from tokenlaw.operators import arguments
    big = torch.ones(arguments._SUM_FIRST + 7, dtype=dtype)
    arguments.finite(big, "w")
    huge = torch.full_like(big, torch.finfo(dtype).max)       # finite entries, sum inf: still finite
    arguments.finite(huge, "w")
    for bad, word in ((float("nan"), "NaN"), (float("inf"), "inf"), (-float("inf"), "inf")):
        t = big.clone()
        t[-3] = bad
        with pytest.raises(InvalidArgument, match=f"w: contains {word}"):
            arguments.finite(t, "w")
    both = huge.clone()
    both[0] = float("nan")
    with pytest.raises(InvalidArgument, match="w: contains NaN"):
        arguments.finite(both, "w")
