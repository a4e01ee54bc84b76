"""tokenlaw's Triton OAttention kernel at the attention core (kernels/core_declarations.py), interpreted on CPU.

One small drawn-by-hand example per law family (causal with a bool mask and a fully masked row, GQA refused as
undeclared): the kernel's output and its fused backward against the float64 formula within the derived bounds, the
masked row's declared 0.  The whole default check of the declaration is an opt-in command (docs/core.md).
"""
from __future__ import annotations

import pytest
import torch

from tokenlaw.kernels import capabilities
from tokenlaw.properties import core_laws
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import collect
from tokenlaw.properties.core_case import CoreCase

pytestmark = pytest.mark.skipif(not capabilities.interpreting() and not torch.cuda.is_available(),
                                reason="needs TRITON_INTERPRET=1 or a CUDA GPU")


def test_the_oattention_kernel_is_the_softmax_core_with_its_backward():
    spec = collect("tokenlaw.kernels.core_declarations")["triton_oattention"]
    assert spec.core.not_runnable is None
    assert {"core_formula", "core_gradient", "core_masked_row", "core_causality"} <= set(spec.claims)
    assert "core_gqa" not in spec.claims and "core_scale" not in spec.claims      # not what the kernel takes
    case = CoreCase(op=spec, dtype=torch.float32, n=5, s=5, d=4, ev=4, heads=2, hkv=2, batch=1, seed=3, pos=2,
                    causal=True, core_mask="bool", mask_shape="square", mask_density=0.6, hidden_rows=(1,))
    for law in (core_laws.core_formula, core_laws.core_gradient, core_laws.core_masked_row):
        verdict = law(case)
        assert verdict.status == V.Status.HOLDS and not verdict.inconclusive, (law.__name__, verdict.detail)


def test_the_declaration_says_why_it_cannot_run_without_interpreter_or_gpu(monkeypatch):
    from tokenlaw.kernels import core_declarations
    monkeypatch.setattr(core_declarations, "interpreting", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "TRITON_INTERPRET" in core_declarations._why_not()
