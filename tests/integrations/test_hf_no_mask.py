"""The HF bridge's no-mask path and drawn scaling (issue 43, classes 2 and 9)."""
from __future__ import annotations

import math
import types

import pytest
import torch

pytest.importorskip("transformers")

from tokenlaw.integrations.hf.declared import SCALING_OCTAVES, declare_hf_attention  # noqa: E402
from tokenlaw.operators.xp import TORCH  # noqa: E402
from tokenlaw.properties.catalogue import collect  # noqa: E402

SEEN = []


def recording(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    SEEN.append(dict(mask=attention_mask, scaling=scaling, is_causal=module.is_causal))
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


def _declared(**kw):
    module = types.ModuleType("hf_no_mask_ops")
    module.rec = declare_hf_attention("rec", fn=recording, module=module.__name__, **kw)
    return collect(module)["rec"]


def _call(op, mask, seed=0):
    SEEN.clear()
    p = op.domain.draw(torch.Generator().manual_seed(seed), 4)
    x = torch.randn(1, 3, 4, dtype=torch.float64)
    op.fn(TORCH, x, mask, **p)
    return SEEN[-1], p


@pytest.mark.parametrize("causal,fmt,passes_none", [(False, "bool", True), (True, "bool", True),
                                                    (False, "additive", True), (True, "additive", False)])
def test_no_mask_reaches_the_function_as_hf_passes_it(causal, fmt, passes_none):
    op = _declared(causal=causal, mask_format=fmt)
    seen, _ = _call(op, None)
    assert (seen["mask"] is None) == passes_none, seen
    assert seen["is_causal"] is causal
    if not passes_none:                                   # eager's causal mask is always built, as HF does
        assert seen["mask"].shape[-2:] == (3, 3)
    with_mask, _ = _call(op, torch.ones(1, 3, 3, dtype=torch.float64))
    assert with_mask["mask"] is not None                  # a mask tensor is always handed over


def test_scaling_is_drawn_not_only_one_over_sqrt_dh():
    op = _declared()
    drawn = []
    for seed in range(20):
        seen, p = _call(op, None, seed)
        assert seen["scaling"] == p["scaling"]            # the bridge passes the drawn value through
        drawn.append(p["scaling"])
    top = 1.0 / math.sqrt(4)
    assert all(top * 2.0 ** -SCALING_OCTAVES <= s <= top for s in drawn), drawn
    assert max(drawn) / min(drawn) > 2.0                  # spread over the octaves, not one value
