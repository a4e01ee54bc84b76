"""The edges the fuzz tier must handle, shown on concrete cases (issue 4, acceptance)."""
from __future__ import annotations

import pytest
import torch

from tokenlaw.fuzz.strategies import tiny_magnitudes
from tokenlaw.operators import projections
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.operators.xp import TORCH
from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS

REG = default_registry()
HALF = (torch.float16, torch.bfloat16)


@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
def test_near_null_token_with_subnormal_norm_is_handled(dtype):
    tiny = tiny_magnitudes(dtype)[0]
    case = Case(op=REG["oattention"], dtype=dtype, n=4, d=4, seed=3, near_null=(1,), tiny=tiny, pos=2)
    h = case.x.to(dtype)[:, 1]
    sq = (h * h).sum(-1)
    assert bool((h != 0).any()), "the near-null row must not already be exactly null in this dtype"
    assert float(sq.max()) < torch.finfo(dtype).tiny, "|h|^2 must be subnormal or underflow to 0"
    out = case.runner.run(case.x, case.mask)
    assert torch.isfinite(out).all()
    for name in ("null_receiver", "null_source_insertion", "permutation_equivariance", "mask_respect"):
        v = CONTRACTS[name](case)
        assert not v.violated, (name, v.detail)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_null_token_with_huge_key_leaves_oattention_outputs_unchanged(dtype):
    case = Case(op=REG["oattention"], dtype=dtype, n=3, d=4, seed=11, bias_scale=1e4, pos=1)
    p = case.params
    _, k, _ = projections.project_qkv(TORCH, torch.zeros(1, 1, 4, dtype=torch.float64), **{
        n: p[n] for n in ("wq", "bq", "wk", "bk", "wv", "bv", "heads")})
    assert float(k.abs().max()) > 1e3, "the null token's key is the (huge) bias"
    v = CONTRACTS["null_source_insertion"](case)
    assert not v.violated, v.detail
    # and directly: the old tokens' outputs do not move at all in float64
    x2 = torch.cat([case.x[:, :1], torch.zeros_like(case.x[:, :1]), case.x[:, 1:]], dim=1)
    a = case.runner.run(x2, None, dtype=torch.float64)[:, [0, 2, 3]]
    b = case.runner.run(case.x, None, dtype=torch.float64)
    torch.testing.assert_close(a, b, rtol=1e-12, atol=0.0)
    assert float(case.runner.run(x2, None, dtype=torch.float64)[:, 1].abs().max()) == 0.0


@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
def test_fully_masked_row_gives_zero_not_nan(dtype):
    case = Case(op=REG["oattention"], dtype=dtype, n=4, d=4, seed=5, mask_kind="empty_row", pos=2, bias_scale=16.0)
    assert float(case.mask[:, 2].abs().max()) == 0.0
    out = case.runner.run(case.x, case.mask)
    assert torch.isfinite(out).all()
    assert bool((out[:, 2] == 0).all()), out[:, 2]
    assert CONTRACTS["empty_support"](case).status == "holds"


@pytest.mark.parametrize("op", ["oattention", "ostandardize", "otransformer"])
@pytest.mark.parametrize("dtype", HALF, ids=["float16", "bfloat16"])
def test_half_precision_null_receivers_are_exact_zeros(op, dtype):
    spec = REG[op]
    for seed in range(5):
        case = Case(op=spec, dtype=dtype, n=5, d=4, seed=seed, null=(0, 3), scale=4.0)
        out = case.runner.run(case.x, case.mask)
        zeros = out[:, [0, 3]]
        assert zeros.dtype == dtype
        assert bool((zeros == 0).all()), zeros        # 0.0, not 1e-30
        if "null_receiver" in spec.claims:
            assert CONTRACTS["null_receiver"](case).status == "holds"
