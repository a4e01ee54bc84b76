"""FlexAttention's no-mask path (issue 43, class 2): without a mask_mod the operator calls flex with
block_mask=None, and block_layouts compares that call with a BlockMask of every key."""
from __future__ import annotations

import pytest
import torch

from tokenlaw.operators import flex

pytestmark = pytest.mark.skipif(flex.available() is not None, reason="FlexAttention not installed")


def test_explicit_describes_no_mask_by_every_key():
    mods = flex.Mods(None, None)
    assert mods.block_mask(1, 1, 4, flex.PLAIN, "cpu") is None                 # the no-mask path
    every = mods.block_mask(1, 1, 4, flex.Variant(explicit=True), "cpu")
    assert every is not None and bool(every.to_dense().all())
    q = torch.randn(1, 1, 4, 2, dtype=torch.float64)
    none = flex.flex_core(mods, q, q, q)
    full = flex.flex_core(mods, q, q, q, flex.Variant(explicit=True))
    assert torch.allclose(none, full, rtol=0, atol=1e-12)


def test_a_declared_mask_mod_is_kept_by_explicit():
    causal = flex.Mods(None, lambda b, h, q_idx, kv_idx: q_idx >= kv_idx)
    assert causal.mask_fn(None, explicit=True) is causal.mask_mod
