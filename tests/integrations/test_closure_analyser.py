"""The nn.Module closure analyser and ``tokenlaw closure``: first breaking layer on the three example models."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from tokenlaw.app.cli import main
from tokenlaw.integrations.closure import examples as E
from tokenlaw.integrations.closure.analyser import (CONTEXTUAL_ERASURE, ZERO_ABSORPTION, ClosureExample, analyse,
                                                    as_example, positions_for)
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.mask_insertion import insert_into_mask


@pytest.mark.parametrize("factory", [E.torch_encoder, E.torch_encoder_masked, E.torch_encoder_norm_first])
def test_transformer_encoder_breaks_at_first_attention(factory):
    r = analyse(factory(), positions=[0, 3])
    fb = r.first_break
    assert not r.holds
    assert fb.label == "layers.0.self_attn" and fb.type == "MultiheadAttention"
    # softmax gives the null query the mean of the values, and the null key takes softmax mass
    assert fb.kinds == (ZERO_ABSORPTION, CONTEXTUAL_ERASURE)
    assert all(p.output.old_out_shift > 1e-3 for p in r.positions)


def test_transformer_encoder_norm_first_layernorm_is_closed_at_default_init():
    """PyTorch inits LayerNorm's bias to 0, so LN(0) = 0: the pre-norm is not where it breaks (SDPA is)."""
    pos = analyse(E.torch_encoder_norm_first(), positions=[2]).positions[0]
    norm1 = next(r for r in pos.layers if r.label == "layers.0.norm1")
    assert norm1.null_out == 0.0 and not norm1.breaks


def test_oa_only_breaks_at_first_norm_and_disturbs_block_two():
    r = analyse(E.oa_only(), positions=[1, 5])
    assert r.first_break.label == "blocks.0.norm1" and r.first_break.kinds == (ZERO_ABSORPTION,)
    for p in r.positions:
        labels = [x.label for x in p.layers if x.breaks]
        assert labels[:2] == ["blocks.0.norm1", "blocks.0.norm2"]     # LN(0) = beta, both norms of block 1
        attn0 = next(x for x in p.layers if x.label == "blocks.0.attn")
        assert attn0.null_out == 0.0                                  # OAttention itself keeps the null
        assert p.first_old_shift.label == "blocks.1.attn"             # the reactivated null is a source in block 2
        assert p.output.old_out_shift > 1e-2


def test_otransformer_holds_end_to_end():
    r = analyse(E.otransformer(), trials=6)
    assert r.holds and r.first_break is None
    for p in r.positions:
        assert all(x.null_out == 0.0 for x in p.layers)
        assert p.output.ratio <= 1.0


def test_masks_grow_with_the_inserted_null():
    m = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    assert insert_into_mask(m, "visibility", 1).tolist() == [[1, 1, 0], [1, 1, 1], [1, 1, 1]]
    b = torch.tensor([[False, True], [False, False]])
    assert insert_into_mask(b, "blocked", 0)[0].tolist() == [False, False, False]
    pad = torch.tensor([[False, True]])
    assert insert_into_mask(pad, "padding", 2).tolist() == [[False, True, False]]
    add = torch.tensor([[0.0, float("-inf")], [0.0, 0.0]])
    assert insert_into_mask(add, "additive", 1)[0].tolist() == [0.0, 0.0, float("-inf")]
    with pytest.raises(InvalidArgument, match="convention"):
        insert_into_mask(m, "causal", 0)


class _NeedsMask(nn.Module):
    """Refuses to run without a mask of the right size: proves the analyser passes the grown mask."""

    def forward(self, x, attn_mask):
        assert attn_mask.shape[-1] == x.shape[1]
        return x * attn_mask.sum(-1, keepdim=True)


def test_mask_aware_models_are_called_with_their_masks():
    x = torch.randn(1, 3, 2, dtype=torch.float64)
    ex = ClosureExample(_NeedsMask(), x, {"attn_mask": torch.ones(1, 3, 3)}, {"attn_mask": "visibility"})
    r = analyse(ex, positions=[1])
    # out_i = x_i * (number of visible tokens): the visible null changes the count, so old tokens move
    assert r.first_break.label == "<model>" and r.first_break.kinds == (CONTEXTUAL_ERASURE,)


def test_arguments_are_validated():
    with pytest.raises(InvalidArgument, match="positions"):
        positions_for(3, [4])
    with pytest.raises(InvalidArgument, match="shape"):
        as_example(nn.Identity())
    with pytest.raises(InvalidArgument, match="factory"):
        as_example(42)
    ex = as_example(nn.Identity(), shape=(1, 3, 2))
    assert ex.x.shape == (1, 3, 2) and analyse(ex).holds


def test_cli_prints_first_breaking_layer(capsys):
    assert main(["closure", "tokenlaw.integrations.closure.examples:torch_encoder", "--positions", "2"]) == 1
    assert "CLOSURE BREAKS first at layers.0.self_attn" in capsys.readouterr().out
    assert main(["closure", "tokenlaw.integrations.closure.examples:oa_only", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["first_break"]["label"] == "blocks.0.norm1"
    assert all(p["first_old_shift"]["label"] == "blocks.1.attn" for p in report["positions"])
    assert main(["closure", "tokenlaw.integrations.closure.examples:otransformer"]) == 0
    assert "CLOSURE HOLDS" in capsys.readouterr().out
    assert main(["closure", "no_such_module:f"]) == 2
