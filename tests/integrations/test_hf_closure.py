"""``tokenlaw closure --hf-config {llama,bert,gpt2}``: each named first break checked against plain torch.

The oracle never calls the analyser's or transformers' code for the stage it
judges: it recomputes the stage from the module's weights (RMSNorm,
LayerNorm, a Linear, softmax attention written out) on the stream with a null
row inserted, and the report must agree with it.
"""
from __future__ import annotations

import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # tiny models from configs: nothing is ever downloaded

from tokenlaw.integrations import hf  # noqa: E402 (light: transformers is imported by the submodules)

transformers = pytest.importorskip("transformers", reason=hf.INSTALL)

from tokenlaw.app.cli import main  # noqa: E402
from tokenlaw.integrations.hf import models  # noqa: E402
from tokenlaw.integrations.closure.analyser import CONTEXTUAL_ERASURE, ZERO_ABSORPTION  # noqa: E402
from tokenlaw.operators.errors import InvalidArgument  # noqa: E402
from tokenlaw.properties.mask_insertion import insert_into_mask, insert_slice  # noqa: E402

K = 3   # the null goes between tokens 2 and 3 of 6


def closure_json(capsys, *argv):
    code = main(["closure", *argv, "--positions", str(K), "--json"])
    return code, json.loads(capsys.readouterr().out)


def row(report, label):
    return next(r for r in report["positions"][0]["rows"] if r["label"] == label)


def _rope(t, cos, sin):
    half = t.shape[-1] // 2
    rotated = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
    return t * cos[:, None] + rotated * sin[:, None]


def test_llama_breaks_first_at_attention_by_contextual_erasure(capsys):
    """The null survives RMSNorm and the bias-free projections exactly, then takes softmax mass."""
    code, rep = closure_json(capsys, "--hf-config", "llama", "--kv-heads", "2")
    assert code == 1
    fb = rep["first_break"]
    assert fb["label"] == "layers.0.self_attn" and fb["role"] == "attention"
    assert fb["kinds"] == [ZERO_ABSORPTION, CONTEXTUAL_ERASURE]

    # plain torch on the same model (seeded): RMSNorm, q/k/v, RoPE and causal softmax written out
    ex = models.example("llama", models.Shape(kv_heads=2))
    m, att = ex.model.hf, ex.model.hf.layers[0].self_attn
    norm = m.layers[0].input_layernorm
    ids = ex.kwargs["position_ids"]
    pad = ex.kwargs["padding"]

    def attention(h, pos, padding):
        # Llama takes RMSNorm and its rotary angles in float32 whatever the model's dtype (the model's
        # convention, not a rounding to tolerate): so does the oracle, everything else in float64
        f = h.float()
        y = norm.weight * (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)).double()
        b, n, _ = h.shape
        heads, kv, dh = 4, 2, 8
        q = (y @ att.q_proj.weight.T).view(b, n, heads, dh).transpose(1, 2)
        k = (y @ att.k_proj.weight.T).view(b, n, kv, dh).transpose(1, 2).repeat_interleave(heads // kv, 1)
        v = (y @ att.v_proj.weight.T).view(b, n, kv, dh).transpose(1, 2).repeat_interleave(heads // kv, 1)
        inv = 1.0 / (m.config.rope_parameters["rope_theta"] ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh))
        ang = pos[..., None].float() * inv
        cos, sin = (torch.cat([f(ang)] * 2, -1).double() for f in (torch.cos, torch.sin))
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        s = q @ k.transpose(-1, -2) / dh ** 0.5
        allowed = torch.ones(n, n, dtype=torch.bool).tril() & ~padding[:, None, None, :]
        a = torch.softmax(s.masked_fill(~allowed, float("-inf")), -1) @ v
        return y, a.transpose(1, 2).reshape(b, n, -1) @ att.o_proj.weight.T

    h_null = insert_slice(ex.x, 1, K)
    pos_null = torch.cat([ids[:, :K], ids[:, K - 1:K], ids[:, K:]], 1)
    pad_null = insert_slice(pad, 1, K, False)
    with torch.no_grad():
        y0, out0 = attention(ex.x, ids, pad)
        y1, out1 = attention(h_null, pos_null, pad_null)
    assert y1[:, K].abs().max() == 0                         # RMSNorm(0) = 0 * weight: the null survives
    assert (y1[:, K] @ att.k_proj.weight.T).abs().max() == 0  # no bias: its key is 0, its score 0 ...
    old = torch.cat([out1[:, :K], out1[:, K + 1:]], 1)
    shift = float((old - out0).abs().max())
    assert shift > 1e-3                                       # ... which still takes softmax mass
    assert fb["old_out_shift"] == pytest.approx(shift, rel=1e-9)
    assert fb["null_out"] == pytest.approx(float(out1[:, K].abs().max()), rel=1e-9)
    assert row(rep, "layers.0.input_layernorm")["kinds"] == []


def test_gpt2_breaks_first_at_the_layernorm_bias(capsys):
    """Pre-norm GPT-2: ln_1(0) = beta, the shift a trained model has (biases drawn)."""
    code, rep = closure_json(capsys, "--hf-config", "gpt2")
    assert code == 1
    fb = rep["first_break"]
    assert fb["label"] == "h.0.ln_1" and fb["role"] == "norm" and fb["kinds"] == [ZERO_ABSORPTION]
    ln = models.example("gpt2").model.hf.h[0].ln_1.requires_grad_(False)
    plain = torch.nn.functional.layer_norm(torch.zeros(32, dtype=torch.float64), (32,), ln.weight, ln.bias, ln.eps)
    assert torch.equal(plain, ln.bias) and fb["null_out"] == float(plain.abs().max()) > 0


def test_bert_breaks_first_at_the_query_bias_before_any_layernorm(capsys):
    """Post-norm BERT: the null meets attention's biased query projection before any LayerNorm."""
    code, rep = closure_json(capsys, "--hf-config", "bert")
    assert code == 1
    fb = rep["first_break"]
    assert fb["label"] == "encoder.layer.0.attention.self.query" and fb["role"] == "projection"
    assert fb["kinds"] == [ZERO_ABSORPTION]
    q = models.example("bert").model.hf.encoder.layer[0].attention.self.query.requires_grad_(False)
    plain = torch.zeros(32, dtype=torch.float64) @ q.weight.T + q.bias
    assert fb["null_out"] == float(plain.abs().max()) > 0


@pytest.mark.parametrize("family, label", [("gpt2", "h.0.attn"), ("bert", "encoder.layer.0.attention.self")])
def test_zero_biases_move_the_first_break_to_attention(capsys, family, label):
    """With Hugging Face's zero init, LN(0) = 0 and W 0 + 0 = 0: softmax is the first to break."""
    code, rep = closure_json(capsys, "--hf-config", family, "--biases", "hf")
    assert code == 1 and rep["first_break"]["label"] == label
    assert CONTEXTUAL_ERASURE in rep["first_break"]["kinds"]


def test_a_saved_model_is_read_from_its_directory(capsys, tmp_path):
    ex = models.example("llama", models.Shape(layers=1))
    ex.model.hf.save_pretrained(tmp_path)
    code, rep = closure_json(capsys, "--hf-model", str(tmp_path))
    assert code == 1 and rep["first_break"]["label"] == "layers.0.self_attn"


def test_the_table_names_the_first_break(capsys):
    assert main(["closure", "--hf-config", "gpt2", "--layers", "1", "--positions", "2"]) == 1
    out = capsys.readouterr().out
    assert "CLOSURE BREAKS first at h.0.ln_1 (norm: zero absorption lost)" in out
    assert "inserted at 2 after 'drop'" in out


@pytest.mark.parametrize("argv, names", [
    (["--hf-config", "t5"], "--hf-config"),
    (["--hf-config", "llama", "--heads", "3"], "--heads"),
    (["--hf-config", "llama", "--kv-heads", "3"], "--kv-heads"),
    (["--hf-config", "gpt2", "--kv-heads", "2"], "--kv-heads"),
    (["--hf-config", "llama", "--layers", "0"], "--layers"),
    (["--hf-config", "llama", "--tokens", "1"], "--tokens"),
    (["--hf-config", "llama", "--hf-model", "x"], "--hf-model"),
    (["some.module:factory", "--hf-config", "llama"], "target"),
    (["--hf-model", "/nonexistent/dir"], "--hf-model"),
    (["--hf-config", "llama", "--positions", "9"], "positions"),
])
def test_bad_arguments_exit_2_naming_them(capsys, argv, names):
    assert main(["closure", *argv]) == 2
    err = capsys.readouterr().err
    assert names in err and len(err.strip().splitlines()) == 1


def test_without_transformers_the_command_says_how_to_install(capsys, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "transformers", None)     # hidden: import fails
    assert not hf.available()
    assert main(["closure", "--hf-config", "llama"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'tokenlaw[hf]'" in err


def test_llama_with_oattention_holds_closure_at_every_layer(capsys):
    """The retrofit: OAttention through the interface; RMSNorm and the bias-free MLP already map 0 to 0."""
    code = main(["closure", "--hf-config", "llama", "--kv-heads", "2", "--attn", "tokenlaw_oattention",
                 "--positions", "0", "3", "6", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["holds"]
    for p in rep["positions"]:
        judged = [r for r in p["rows"] if r["role"] not in ("embedding", "position")]
        assert all(r["kinds"] == [] and r["null_out"] in (0.0, None) for r in judged)


def test_position_ids_grow_keeping_every_old_id():
    ids = torch.tensor([[0, 1, 2, 3]])
    assert insert_into_mask(ids, "positions", 2).tolist() == [[0, 1, 1, 2, 3]]
    assert insert_into_mask(ids, "positions", 0).tolist() == [[0, 0, 1, 2, 3]]
    with pytest.raises(InvalidArgument, match="position_ids"):
        insert_into_mask(ids.double(), "positions", 1, "position_ids")
