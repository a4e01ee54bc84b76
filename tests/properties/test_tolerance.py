"""The tolerance model: derived bounds that pass honest rounding and still catch seeded bugs."""
from __future__ import annotations

import pytest
import torch

from tokenlaw.properties.catalogue import default_registry
from tokenlaw.operators import oattention as oa_module
from tokenlaw.properties.case import Case
from tokenlaw.properties.null_laws import null_source_insertion
from tokenlaw.properties.tolerance import PROBE, compare


def sides(fn, dtype):
    return {dt: fn(dt) for dt in {dtype, torch.float64, PROBE[dtype]}}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_rounding_of_an_honest_identity_passes(dtype):
    x = torch.randn(64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    # (x * 3) / 3 == x in the reals; each side rounds in its own dtype.
    a = sides(lambda dt: (x.to(dt) * 3) / 3, dtype)
    b = sides(lambda dt: x.to(dt), dtype)
    assert compare(a, b, dtype).ok


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_bug_only_in_the_dtype_under_test_is_caught(dtype):
    """A 20-ulp error that exists only in D must not inflate its own bound."""
    x = torch.randn(64, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    u = torch.finfo(dtype).eps / 2

    def buggy(dt):
        y = (x.to(dt) * 3) / 3
        return y * (1 + 40 * u) if dt == dtype else y

    c = compare(sides(buggy, dtype), sides(lambda dt: x.to(dt), dtype), dtype)
    assert not c.ok and c.ratio > 1


def test_presence_leak_only_in_float16_is_caught_by_null_insertion(monkeypatch):
    """A null source leaking 0.5 presence mass in fp16 only: float64 is clean, fp16 must fail."""
    core = oa_module.oattention_core

    def leaky(xp, q, k, v, p_src, p_rcv, mask, *, eps_den):
        if q.dtype == torch.float16:
            p_src = p_src + 0.5           # sources only: the null's own output stays exactly 0
        return core(xp, q, k, v, p_src, p_rcv, mask, eps_den=eps_den)

    op = default_registry()["oattention"]
    case = Case(op=op, dtype=torch.float16, seed=3, n=3, d=4, pos=1)
    assert not null_source_insertion(case).violated
    monkeypatch.setattr(oa_module, "oattention_core", leaky)
    assert not null_source_insertion(Case(op=op, dtype=torch.float64, seed=3, n=3, d=4, pos=1)).violated
    v = null_source_insertion(case)
    assert v.violated and "old tokens" in v.detail, v.detail
