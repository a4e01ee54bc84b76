"""properties/case.py + runner.py: a frozen drawn example, and the runner that evaluates the operator on it."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from tokenlaw.properties.case import Case, CaseRunner
from tokenlaw.properties.catalogue import default_registry

REG = default_registry()


def test_a_case_is_frozen_and_replace_draws_afresh():
    case = Case(REG["oattention"], torch.float32, seed=2, n=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.n = 5
    x = case.x_dense
    assert case.x_dense is x                                   # drawn once, kept
    longer = dataclasses.replace(case, n=5)
    assert longer.x_dense.shape == (1, 5, case.d)              # a new case draws its own tensors
    assert torch.equal(dataclasses.replace(case, pos=1).x_dense, x)   # same seed and shape: same draw
    assert Case.from_fields(case.op, case.fields()).fields() == case.fields()


def test_the_runner_runs_the_case_in_its_dtype_and_layout():
    case = Case(REG["oattention"], torch.float16, seed=1, n=3, layout="strided")
    runner = case.runner
    assert isinstance(runner, CaseRunner) and runner.implementation.name == case.backend
    out = runner.run(case.x, case.mask)
    assert out.dtype == torch.float16
    ref = case.on_reference()
    assert ref.backend == "eager" and ref.runner is not runner
    assert torch.equal(out, dataclasses.replace(case, layout="contiguous").runner.run(case.x, case.mask))
    kwargs = runner.arguments(case.mask, torch.float64)
    assert all(v.dtype == torch.float64 for v in kwargs.values() if torch.is_tensor(v) and v.is_floating_point())


def test_the_case_adjusts_parameters_through_the_declared_roles():
    op = REG["oattention"]
    roles = op.domain.roles
    plain = Case(op, torch.float64, seed=4)
    scaled = Case(op, torch.float64, seed=4, bias_scale=100.0, tau=0.25)
    assert torch.equal(scaled.params[roles.biases[0]], plain.params[roles.biases[0]] * 100.0)
    assert scaled.params[roles.threshold] == 0.25 != plain.params[roles.threshold]
