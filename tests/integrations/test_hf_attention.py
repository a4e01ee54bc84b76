"""``attn_implementation="tokenlaw_oattention"``: the padding mask reaches the operator, causality without a
mask, GQA, and what it refuses.  Each check has the wrong registration it must catch beside it."""
from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tokenlaw.integrations import hf  # noqa: E402

transformers = pytest.importorskip("transformers", reason=hf.INSTALL)

from tokenlaw.integrations.hf import attention, models  # noqa: E402
from tokenlaw.operators.errors import InvalidArgument  # noqa: E402

SHAPE = models.Shape(layers=2, hidden=32, heads=4, kv_heads=2)
IDS = torch.randint(models.VOCAB, (2, 6), generator=torch.Generator().manual_seed(5))
LEFT_PADDED = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
# a left-padded query sees no key (softmax: NaN or a guess); right padding leaves every causal row a
# visible key, so plain softmax is an oracle there
RIGHT_PADDED = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])


def llama(name=attention.NAME, **settings):
    model = models.build("llama", SHAPE)
    attention.attach(model, name=name, **settings)
    return model


def hidden(model, ids, mask=None):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask).last_hidden_state


def _ignore_none_mask(module, query, key, value, attention_mask, **kw):
    """Wrong: a None mask read as 'everything visible', forgetting that None means purely causal."""
    if attention_mask is None:
        attention_mask = torch.ones(1, 1, query.shape[-2], key.shape[-2], dtype=torch.bool)
    return attention.oattention_forward(module, query, key, value, attention_mask, **kw)


def _tiled_heads(module, query, key, value, attention_mask, **kw):
    """Wrong: key/value heads tiled (0 1 0 1) instead of each serving its group (0 0 1 1)."""
    r = query.shape[1] // key.shape[1]
    return attention.oattention_forward(module, query, key.repeat(1, r, 1, 1), value.repeat(1, r, 1, 1),
                                        attention_mask, **kw)


def test_a_masked_key_never_influences_an_output():
    """Row 1 is left-padded by two: redrawing its padded ids leaves every real token's output bit for bit."""
    model = llama()
    other = IDS.clone()
    other[1, :2] = (IDS[1, :2] + 7) % models.VOCAB
    a, b = hidden(model, IDS, LEFT_PADDED), hidden(model, other, LEFT_PADDED)
    assert torch.equal(a[:, 2:], b[:, 2:]) and torch.equal(a[0], b[0])
    assert not torch.equal(a[1, :2], b[1, :2])       # the padded tokens themselves did change: the probe bites


def test_without_the_mask_interface_the_padding_is_dropped():
    """The pitfall: registering only the attention function; the same probe then sees the padding leak."""
    attention.register()
    transformers.AttentionInterface.register("tokenlaw_nomask", attention.oattention_forward)
    model = models.build("llama", SHAPE)
    handles = [layer.register_forward_pre_hook(attention._record(attention.Settings()), with_kwargs=True)
               for layer in attention.decoder_layers(model)]
    model.set_attn_implementation("tokenlaw_nomask")
    other = IDS.clone()
    other[1, :2] = (IDS[1, :2] + 7) % models.VOCAB
    a, b = hidden(model, IDS, LEFT_PADDED), hidden(model, other, LEFT_PADDED)
    assert not torch.equal(a[1, 2:], b[1, 2:])
    for h in handles:
        h.remove()


@pytest.mark.parametrize("fn, causal", [(attention.oattention_forward, True), (_ignore_none_mask, False)])
def test_causality_is_applied_when_the_mask_is_none(fn, causal):
    """No padding: HF's sdpa_mask returns None, so causality must come from module.is_causal."""
    attention.register("tokenlaw_probe", fn)
    model = llama("tokenlaw_probe")
    later = IDS.clone()
    later[:, -1] = (IDS[:, -1] + 3) % models.VOCAB
    a, b = hidden(model, IDS), hidden(model, later)
    assert torch.equal(a[:, :-1], b[:, :-1]) is causal


@pytest.mark.parametrize("fn, agrees", [(attention.oattention_forward, True), (_tiled_heads, False)])
def test_gqa_heads_agree_with_softmax_at_tiny_tau(fn, agrees):
    """tau, eps_den = 1e-12: presence 1 - tau/|h|^2 (|h|^2 ~ 1e-2 entering layer 0) and the floor move outputs
    ~1e-10 relative, so OAttention is HF's sdpa softmax (float64 throughout) to 1e-8 on every real token, two
    orders above that for two layers; tiled heads move them by O(1).  (HF's eager takes softmax in float32,
    2e-7 here: no float64 oracle.)"""
    attention.register("tokenlaw_probe", fn)
    model = llama("tokenlaw_probe", tau=1e-12, eps_den=1e-12)
    sdpa = models.build("llama", SHAPE, attn="sdpa")
    a, b = hidden(model, IDS, RIGHT_PADDED), hidden(sdpa, IDS, RIGHT_PADDED)
    real = RIGHT_PADDED.bool()
    assert bool((a[real] - b[real]).abs().max() < 1e-8) is agrees


def test_refusals_name_what_is_missing():
    model = models.build("llama", SHAPE)
    att = model.layers[0].self_attn
    q = torch.zeros(1, 4, 3, 8, dtype=torch.float64)
    kv = torch.zeros(1, 2, 3, 8, dtype=torch.float64)
    with pytest.raises(InvalidArgument, match="attach"):
        attention.oattention_forward(att, q, kv, kv, None)
    attention._CARRIERS[att] = (torch.zeros(1, 3, 32, dtype=torch.float64), attention.Settings())
    with pytest.raises(InvalidArgument, match="s_aux"):
        attention.oattention_forward(att, q, kv, kv, None, s_aux=torch.zeros(4))
    with pytest.raises(InvalidArgument, match="KV cache"):
        attention.oattention_forward(att, q[:, :, :1], kv, kv, None)
    with pytest.raises(InvalidArgument, match="key/value heads"):
        attention.oattention_forward(att, q, torch.zeros(1, 3, 3, 8, dtype=torch.float64), kv, None)
    with pytest.raises(InvalidArgument, match="tau"):
        attention.Settings(tau=0.0)
