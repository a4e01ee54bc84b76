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


def test_both_mask_kinds_and_the_broadcast_shape_are_drawn():
    """mask_format=("bool", "additive"): per example the kind is drawn, and a mask the same for every batch
    element comes as (1, 1, N, N) or as (B, 1, N, N); a fully masked row arrives as such in either kind."""
    op = _declared(mask_format=("bool", "additive"))
    mask = torch.ones(2, 3, 3, dtype=torch.float64)
    mask[:, 1] = 0.0                                      # row 1 sees no key, in both batch elements
    forms = set()
    for seed in range(40):
        SEEN.clear()
        p = op.domain.draw(torch.Generator().manual_seed(seed), 4)
        op.fn(TORCH, torch.randn(2, 3, 4, dtype=torch.float64), mask, **p)
        m = SEEN[-1]["mask"]
        hidden = ~m if m.dtype == torch.bool else m < 0
        assert bool(hidden[:, :, 1].all()) and not bool(hidden[:, :, 0].any())
        forms.add(("bool" if m.dtype == torch.bool else "additive", m.shape[0]))
    assert forms == {("bool", 1), ("bool", 2), ("additive", 1), ("additive", 2)}, forms


def test_the_bool_as_additive_canary_holds_where_only_additive_masks_are_declared():
    """The canary fuzz_hf_bool_as_additive's function is right for the kind it would be given alone."""
    from canaries.fuzz_hf_bool_as_additive import adds_the_mask

    from tokenlaw.fuzz.rows import run_rows
    from tokenlaw.fuzz.engine import PROFILES
    from tokenlaw.properties import verdict as V
    from tokenlaw.properties.plan import plan

    module = types.ModuleType("hf_additive_only_ops")
    module.adds = declare_hf_attention("adds", fn=adds_the_mask, mask_format="additive", module=module.__name__)
    reg = collect(module)
    rows = plan(reg, operators=["adds"], contracts=["mask_respect", "spec_reference"])
    run_rows(reg, rows, examples=PROFILES["smoke"], seed=0, replay_dir=None, progress=False)
    assert [r.outcome for r in rows] == [V.Outcome.HOLDS] * 2, [c.verdict.detail for r in rows for c in r.cells]
