"""The ``unmasked`` law (issue 43, class 2): planned for every masked operator and only those, green on the
shipping operators in the narrowest dtypes, exact (one differing bit is a violation)."""
from __future__ import annotations

import torch

from tokenlaw.fuzz.engine import run_cell
from tokenlaw.operators.xp import TORCH
from tokenlaw.properties import statement as S
from tokenlaw.properties.catalogue import CONTRACTS, default_registry
from tokenlaw.properties.plan import plan


def test_planned_for_every_masked_operator_and_only_those():
    reg = default_registry()
    rows = {r.operator for r in plan(reg, contracts=["unmasked"])}
    assert rows == {op.name for op in reg if "masked" in op.traits}
    assert "sdpa" in rows and "standard_host" in rows and "sm_fir" not in rows


def test_the_shipping_sdpa_holds_in_half_precision():
    op = default_registry()["sdpa"]
    for dt in (torch.float16, torch.bfloat16):
        v = run_cell(op, CONTRACTS["unmasked"], dt, examples=15, seed=0, replay_dir=None)
        assert v.status.value == "holds" and not v.violated, v.detail


def test_same_is_bit_for_bit():
    a = torch.tensor([1.0, float("nan"), float("inf")], dtype=torch.float64)
    assert not S._same(a, a.clone(), "a").violated                   # NaN matches NaN, inf matches inf
    b = a.clone()
    b[0] = torch.nextafter(b[0], torch.tensor(2.0, dtype=torch.float64))   # one ulp off
    v = S._same(a, b, "a")
    assert v.violated and v.discrepancy > 0, v.detail


def test_all_visible_is_ones_or_causal_in_both_array_types():
    x = torch.zeros(2, 3, 1, dtype=torch.float64)
    assert torch.equal(S.all_visible(x), torch.ones(2, 3, 3, dtype=torch.float64))
    assert torch.equal(S.all_visible(x, causal=True)[1], torch.ones(3, 3, dtype=torch.float64).tril())
    obj = S.all_visible(x.numpy().astype(object), causal=True)
    assert obj.shape == (2, 3, 3) and obj[0, 0, 1] == 0 and obj[0, 2, 0] == 1
    assert TORCH is not None
