"""Generated bad-input tests: every declared operator and every kernel entry point rejects bad input.

One valid call per operator is built from its domain; every bad variant of
it (``arguments.error_inputs`` plus the operator's own ``errors=``, in the
spirit of PyTorch OpInfo's ``error_inputs``) must raise the project's one
error type, :class:`InvalidArgument`, whose message starts with the name of
the argument at fault.  Nothing may be broadcast, cast or computed into NaN.
"""
from __future__ import annotations

import inspect
import re

import pytest
import torch

from tokenlaw.operators import InvalidArgument
from tokenlaw.operators.arguments import error_inputs
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.operators.xp import TORCH

REGISTRY = default_registry()


def valid_call(op) -> dict:
    """A small valid keyword call of ``op``: x, its domain's parameters and, if it takes one, a 0/1 mask."""
    gen = torch.Generator().manual_seed(0)
    d = op.domain.d_model[0]
    kwargs = dict(x=torch.randn(2, 3, d, generator=gen, dtype=torch.float64), **op.domain.params(gen, d))
    if "mask" in inspect.signature(op.fn).parameters:
        kwargs["mask"] = torch.tril(torch.ones(3, 3))
    return kwargs


def operator_cases():
    for op in REGISTRY:
        kwargs = valid_call(op)
        bad = list(error_inputs(kwargs)) + list(op.errors(kwargs) if op.errors else ())
        for e in bad:
            yield pytest.param(op, e, id=f"{op.name}-{e.label}")


def assert_names(err, argument):
    message = str(err.value)
    assert "\n" not in message, message
    assert re.match(re.escape(argument) + r"\b", message), f"error does not name {argument!r} first: {message}"


def test_every_operator_has_error_inputs():
    ops_with_cases = {p.values[0].name for p in operator_cases()}
    assert ops_with_cases == set(REGISTRY.names())


@pytest.mark.parametrize("op", list(REGISTRY), ids=REGISTRY.names())
def test_valid_call_runs(op):
    """The unmutated call is accepted (so each bad case fails for its mutation alone)."""
    kwargs = valid_call(op)
    out = op.fn(TORCH, **kwargs)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("op, bad", list(operator_cases()))
def test_operator_rejects(op, bad):
    with pytest.raises(InvalidArgument) as err:
        op.fn(TORCH, **bad.mutate(valid_call(op)))
    assert_names(err, bad.argument)


# -- kernel entry points ----------------------------------------------------------------------
# The custom ops and the layer-level wrappers validate before any launch, so these run on the
# CPU under the interpreter's rules without launching a kernel.
kernels = pytest.importorskip("tokenlaw.kernels", reason="the Triton backend is not installed")

from tokenlaw.kernels import layers, ops, validate  # noqa: E402
from tokenlaw.kernels.backend import TRITON, implementation  # noqa: E402


def kernel_op_calls():
    gen = torch.Generator().manual_seed(1)

    def qkv():
        return {n: torch.randn(2, 2, 4, 8, generator=gen) for n in "qkv"}

    yield "oattention_fwd", ops.oattention_fwd, dict(**qkv(), p=torch.rand(2, 4, generator=gen),
                                                     mask=torch.tril(torch.ones(4, 4)), eps_den=1e-3, causal=False)
    yield "sm_fir_fwd", ops.sm_fir_fwd, qkv()
    yield "pn_fir_tau_fwd", ops.pn_fir_tau_fwd, dict(**qkv(), tau=torch.tensor(0.1))


def kernel_cases():
    for name, fn, kwargs in kernel_op_calls():
        for e in validate.error_inputs(kwargs):
            yield pytest.param(fn, kwargs, e, id=f"tokenlaw::{name}-{e.label}")
    for op in REGISTRY:
        if op.name in TRITON.binds():
            kwargs = valid_call(op)
            kwargs["x"] = kwargs["x"].float()
            kwargs = {k: v.float() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kwargs.items()}
            impl = implementation(op)
            for e in error_inputs(kwargs):      # the layers name the mask `mask`, as the eager operators do
                yield pytest.param(impl, kwargs, e, id=f"{op.name}_layer-{e.label}")


@pytest.fixture
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")   # validation only: no kernel is launched


@pytest.mark.parametrize("fn, kwargs, bad", list(kernel_cases()))
def test_kernel_entry_point_rejects(interpreter, fn, kwargs, bad):
    with pytest.raises(InvalidArgument) as err:
        fn(**bad.mutate(kwargs))
    assert_names(err, bad.argument)


def test_custom_op_rejects_fractional_mask_that_its_backward_would_multiply(interpreter):
    """tokenlaw::oattention_fwd: a 0.1 mask would be 'visible' forward and 0.1 x backward."""
    q = k = v = torch.randn(1, 1, 4, 8)
    with pytest.raises(InvalidArgument, match=r"^mask: entries must be 0 or 1"):
        ops.oattention_fwd(q, k, v, torch.ones(1, 4), torch.full((4, 4), 0.1), 1e-3, False)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_layer_errors_name_the_users_tensor_not_an_internal_one(interpreter, dtype):
    """A dtype the kernels cannot take is refused naming x, never the internal q / p."""
    op = REGISTRY["oattention"]
    kwargs = valid_call(op)
    kwargs = {k: v.to(dtype) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kwargs.items()}
    with pytest.raises(InvalidArgument, match=r"^x: "):
        layers.oattention_layer(kwargs.pop("x"), kwargs.pop("mask"), **kwargs)
