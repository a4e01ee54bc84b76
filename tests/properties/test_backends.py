"""The backend protocol attacked: a third party's backend, registered without an entry point, is judged by
the implementation laws and the differential check; a wrong one is rejected, an operator it does not
implement is left out with the reason, an unknown name is refused naming the choices."""
from __future__ import annotations

import pytest
import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.properties.plan import plan


class Borrowed(backends.Backend):
    """A 'kernel' for sm_fir only that evaluates the eager math (the honest twin of the wrong one)."""

    name = "borrowed"
    dtypes = ("float32",)

    def implements(self, op):
        return None if op.name == "sm_fir" else f"the borrowed backend has no kernel for {op.name!r}"

    def run(self, op, x, **kwargs):
        return op.fn(TORCH, x, **kwargs)


class OffByOnePercent(Borrowed):
    """The same, with every output 1% too large: a bug no rounding explains."""

    name = "off_by_one_percent"

    def run(self, op, x, **kwargs):
        return super().run(op, x, **kwargs) * 1.01


@pytest.fixture(params=[Borrowed, OffByOnePercent], ids=lambda b: b.name)
def backend(request):
    with backends.register(request.param()) as b:
        yield b


def test_a_registered_backend_is_planned_like_any_other(backend, registry):
    rows = plan(registry, operators=["sm_fir", "sdpa"], backend=backend.name)
    assert {r.operator for r in rows} == {"sm_fir"}
    assert rows.left_out == {"sdpa": "the borrowed backend has no kernel for 'sdpa'"}
    judged = {r.contract for r in rows if r.cells}
    assert {"eager_agreement", "nan_padding", "determinism", "gradient_agreement", "differential",
            "gradient_causality"} <= judged                          # the implementation laws and sm_fir's own
    assert all(c.dtype == "float32" for r in rows for c in r.cells)


@pytest.mark.parametrize("law", ["eager_agreement", "differential"])
def test_the_wrong_backend_is_rejected_and_the_honest_one_is_not(backend, law, registry):
    v = run_cell(registry["sm_fir"], CONTRACTS[law], torch.float32, examples=10, seed=0,
                 backend=backend.name, replay_dir=None)
    if backend.name == "borrowed":
        assert v.status == V.Status.HOLDS, v.detail
    else:
        assert v.violated and v.counterexample["backend"] == backend.name, v.detail


def test_dtypes_the_backend_does_not_compute_in_are_not_runnable(backend, registry):
    v = run_cell(registry["sm_fir"], CONTRACTS["determinism"], torch.float16, examples=2, backend=backend.name,
                 replay_dir=None)
    assert v.status == V.Status.NOT_RUNNABLE and "computes in ['float32']" in v.detail


def test_unknown_backend_names_are_refused_naming_the_choices(registry):
    with pytest.raises(InvalidArgument, match=r"--backend: expected one of \['eager'.*got 'nope'"):
        plan(registry, backend="nope")
    with pytest.raises(InvalidArgument, match="already exists"):
        with backends.register(Borrowed()), backends.register(Borrowed()):
            pass


def test_what_a_contract_evaluates_decides_what_another_backend_is_judged_by(registry):
    class NoGrad(Borrowed):
        name = "no_grad"
        autograd = False

    with backends.register(NoGrad()):
        rows = {r.contract: r for r in plan(registry, operators=["sm_fir"], backend="no_grad")}
    assert rows["gradient_agreement"].cells == [] and "not differentiable" in rows["gradient_agreement"].reason
    assert rows["gradcheck"].cells == [] and "finite differences" in rows["gradcheck"].reason   # reference only
    assert rows["silence"].cells == [] and "no threshold tau" in rows["silence"].reason         # form(op)
    assert rows["simplex"].cells and rows["zero_transcendental"].cells


@pytest.mark.parametrize("options, message", [
    (dict(evaluated="vibes"), "evaluated: expected one of"),
    (dict(evaluated="reference"), "needs unjudged="),
    (dict(symbolic=dict(shape=(2, 1))), "symbolic: expected SymbolicOptions"),   # options are one typed record
    (dict(fuzz=dict(near_null=False)), "fuzz: expected FuzzOptions"),
])
def test_contract_options_are_validated(options, message):
    from tokenlaw.properties.catalogue import contract

    with pytest.raises(ValueError, match=message):
        contract(exact=True, **options)


def test_the_cli_names_the_backend_choices(tmp_path, capsys):
    from tokenlaw.app.cli import main

    assert main(["check", "--backend", "nope", "--examples", "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "got 'nope'" in err and str(backends.names()) in err
