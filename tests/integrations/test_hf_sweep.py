"""The all-architectures sweep: the zoo builds tiny models and reads traits from what they are, the sweep
lists every architecture (built or with its reason), and the triage neither hides nor invents bugs.

Fast tests run two or three small architectures; the full sweep (``--arch all``) is ``slow``.
"""
from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from tokenlaw.integrations.hf import sweep, zoo  # noqa: E402
from tokenlaw.orchestration import hf_sweep  # noqa: E402


def test_every_causal_lm_architecture_is_enumerated():
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    names = [a.name for a in zoo.architectures()]
    assert sorted(names) == sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) and len(names) >= 100


def test_a_per_layer_list_keeps_every_kind_it_had():
    assert zoo._resample(["sliding_attention"] * 5 + ["full_attention"], 2) == ["sliding_attention", "full_attention"]
    assert zoo._resample(["full_attention"] * 9, 2) == ["full_attention"] * 2
    assert len(zoo._resample(["a", "b", "c", "a"], 2)) == 3           # three kinds need three layers


def test_tiny_config_shrinks_and_keeps_the_kind_of_attention():
    cfg = zoo.tiny_config(zoo.Arch("llama"))
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size) == (zoo.WIDTH, zoo.LAYERS, zoo.VOCAB)
    assert cfg.num_key_value_heads == cfg.num_attention_heads         # Llama's default is multi-head
    assert zoo.tiny_config(zoo.Arch("mistral")).num_key_value_heads == zoo.KV_HEADS   # GQA stays GQA


@pytest.mark.parametrize("name, expect", [
    ("gpt2", dict(causal=True, positions="absolute", takes_position_ids=True)),
    ("bert", dict(causal=False, positions="absolute")),          # a BERT LM head without is_decoder
    ("llama", dict(causal=True, positions="rotary", sliding_window=False, moe=False)),
    ("bloom", dict(causal=True, positions="alibi", takes_position_ids=False)),
    ("xlm", dict(causal=False)),                                  # config.causal=False: a bidirectional mask
])
def test_traits_are_read_from_what_the_model_is(name, expect):
    t = zoo.facts(zoo.Arch(name)).traits
    assert {k: getattr(t, k) for k in expect} == expect


def test_an_unknown_architecture_is_refused_naming_the_argument():
    from tokenlaw.operators.errors import InvalidArgument
    with pytest.raises(InvalidArgument, match="--arch"):
        zoo.Arch("no_such_model")


def test_the_knobs_reach_the_config():
    from tokenlaw.integrations.hf.model_laws import Knobs
    cfg = zoo.config_for("mistral", Knobs(sliding_window=3, kv_heads=1))
    assert cfg.sliding_window == 3 and cfg.num_key_value_heads == 1
    assert zoo.config_for("mistral", Knobs()).sliding_window is None


def _row(**kw):
    base = dict(arch="x", law="left_padding", dtype="float64", status="violated",
                detail="row 0 left-padded by 1: non-finite where the reference is finite",
                counterexample={"knobs": {"attn": "eager"}, "pad_left": 1, "pad_right": 0})
    return {**base, **kw}


TRAITS = dict(causal=True, positions="rotary", takes_position_ids=True, sliding_window=False,
              attention_chunk_size=False, layer_types=[], gqa=False, moe=False, kv_cache=True,
              implementations=["eager", "sdpa"], head="causal_lm")


def test_the_eager_float64_finding_matches_only_its_signature():
    assert sweep.triage(_row(), TRAITS)["id"] == "hf-eager-float64-padding-nan"
    # attacks: the same NaN in float32, through sdpa, without padding, or a finite gap is not that bug
    assert sweep.triage(_row(dtype="float32"), TRAITS)["kind"] == "untriaged"
    assert sweep.triage(_row(counterexample={"knobs": {"attn": "sdpa"}, "pad_left": 1}), TRAITS)["kind"] == "untriaged"
    assert sweep.triage(_row(counterexample={"knobs": {"attn": "eager"}, "pad_left": 0}), TRAITS)["kind"] == "untriaged"
    assert sweep.triage(_row(detail="|a - b| = 0.3 > bound 1e-6"), TRAITS)["kind"] == "untriaged"


def test_the_documented_upstream_finding_still_reproduces():
    """docs/upstream/hf-eager-float64-padding-nan.md: if transformers fixes it, this says so."""
    cfg = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    m = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation="eager").eval()
    ids, mask, pos = torch.tensor([[0, 5, 7, 9]]), torch.tensor([[0, 1, 1, 1]]), torch.tensor([[0, 0, 1, 2]])
    with torch.no_grad():
        f32 = m(input_ids=ids, attention_mask=mask, position_ids=pos).logits
        f64 = m.double()(input_ids=ids, attention_mask=mask, position_ids=pos).logits
    assert torch.isfinite(f32).all() and not torch.isfinite(f64[0, 1:]).all()


def test_a_small_sweep_lists_every_architecture_and_writes_its_report(tmp_path):
    code = hf_sweep.main(["--arch", "gpt2", "dory", "--laws", "causality", "right_padding", "--examples", "2",
                          "--workers", "1", "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "sweep.json").read_text())
    md = (tmp_path / "sweep.md").read_text()
    assert [a["arch"] for a in doc["architectures"]] == ["gpt2", "dory"]
    assert doc["counts"]["built"] == 1 and doc["counts"]["not_built"] == 1
    assert "| dory | could not build tiny:" in md                 # listed, never dropped
    cells = {(c["law"], c["dtype"]): c["status"] for c in doc["cells"]}
    assert set(cells) == {(law, d) for law in ("causality", "right_padding") for d in ("float64", "float32")}
    assert all(s == "holds" for s in cells.values()), cells       # GPT-2 is causal and right-pads cleanly
    assert code == 0 and doc["meta"]["cpu_s"] > 0 and doc["meta"]["load_start"]


def test_an_untriaged_violation_fails_the_command(tmp_path):
    doc = {"meta": dict(command="x", transformers="t", torch="t", laws=["causality"], dtypes=["float32"], examples=1,
                        seed=0, workers=1, cores=2, wall_s=1.0, cpu_s=1.0, load_start="0", load_end="0"),
           "architectures": [{"arch": "x", "class": "X", "built": True, "traits": TRAITS, "reason": None}],
           "cells": [_row(law="causality", dtype="float32", examples_to_first=1)]}
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    assert hf_sweep.main(["--retriage", "--out", str(tmp_path)]) == 1
    assert "VIOL" in (tmp_path / "sweep.md").read_text()


@pytest.mark.slow
def test_the_full_sweep_lists_every_architecture(tmp_path):
    hf_sweep.main(["--arch", "all", "--examples", "2", "--workers", "2", "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert len(doc["architectures"]) == len(zoo.architectures())
    assert doc["counts"]["violations"].get("untriaged", 0) == 0, sweep.render(doc)


def test_the_command_line_runs_the_sweep(tmp_path):
    from tokenlaw.app import cli
    assert cli.main(["hf", "sweep", "--arch", "gpt2", "--laws", "causality", "--dtype", "float32", "--examples", "1",
                     "--workers", "1", "--out", str(tmp_path)]) == 0
    assert "| gpt2 | ok |" in (tmp_path / "sweep.md").read_text()


def test_a_partial_report_renders_from_the_log_of_a_running_sweep(tmp_path):
    hf_sweep.main(["--arch", "gpt2", "--laws", "causality", "--dtype", "float32", "--examples", "1", "--workers", "1",
                   "--out", str(tmp_path)])
    (tmp_path / "sweep.json").unlink()
    assert hf_sweep.main(["--from-log", "12", "--laws", "causality", "right_padding", "--dtype", "float32",
                          "--out", str(tmp_path)]) == 0
    md = (tmp_path / "sweep.md").read_text()
    assert "**partial**: 1 of 2 cells judged" in md and "| gpt2 | ok | - |" in md


def test_a_wrong_declaration_is_reported_not_hidden():
    """Attack: declare BERT's bidirectional LM head causal; the sweep's cell must show an untriaged violation."""
    import dataclasses
    import functools
    from tokenlaw.integrations.hf import model_laws
    wrong = dataclasses.replace(zoo.facts(zoo.Arch("bert")).traits, causal=True)
    r = model_laws.judge("causality", functools.partial(zoo.config_for, "bert"), wrong, dtype="float32",
                         examples=4, seed=0)
    assert r.status is model_laws.Status.VIOLATED, r.detail
    row = {"arch": "bert", **r.to_json()}
    assert sweep.triage(row, dataclasses.asdict(wrong))["kind"] == "untriaged"


def test_resume_keeps_the_built_cells_of_unchanged_traits(tmp_path):
    args = ["--arch", "gpt2", "--laws", "causality", "--dtype", "float32", "--examples", "1", "--workers", "1",
            "--out", str(tmp_path)]
    hf_sweep.main(args)
    first = json.loads((tmp_path / "sweep.json").read_text())["cells"]
    hf_sweep.main(args + ["--resume"])
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert doc["meta"]["resumed"] == 1 and doc["cells"] == first


def test_roberta_style_position_ids_are_declared_from_the_model_and_padding_holds():
    """RoBERTa numbers positions from padding_idx + 1 (fairseq's make_positions): the padding laws derive
    the position ids the same way, so they hold; declared from 0 (the attack) the same case is violated."""
    import dataclasses
    import functools
    from tokenlaw.integrations.hf import model_laws as ML
    f = zoo.facts(zoo.Arch("roberta"))
    pad = zoo.config_for("roberta", ML.Knobs()).pad_token_id
    assert f.traits.position_start == pad + 1 and "create_position_ids_from_input_ids" in f.source["position_start"]
    assert zoo.facts(zoo.Arch("gpt2")).traits.position_start == 0
    mask = torch.tensor([[0, 0, 1, 1, 1]])
    assert ML.positions(mask).tolist() == [[0, 0, 0, 1, 2]]
    assert ML.positions(mask, pad + 1).tolist() == [[pad, pad, pad + 1, pad + 2, pad + 3]]
    build = functools.partial(zoo.config_for, "roberta")
    for law, case in (("left_padding", ML.Case(ML.Knobs(), tokens=5, pad_left=2, pass_mask=False, seed=3)),
                      ("right_padding", ML.Case(ML.Knobs(), tokens=5, pad_right=2, pass_mask=False, seed=3))):
        held = ML.replay(law, build, f.traits, case, dtype="float32")
        wrong = ML.replay(law, build, dataclasses.replace(f.traits, position_start=0), case, dtype="float32")
        assert held.status is ML.Status.HOLDS, held.detail
        assert wrong.status is ML.Status.VIOLATED, wrong.detail
    # the drawn ids never hold the padding id such a model reads padding from
    x = ML.ids(ML.Case(ML.Knobs(), tokens=20, batch=3, seed=1), 4, avoid=pad)
    assert not (x == pad).any() and not (x == 0).any()


def test_the_knobs_reach_a_multimodal_models_text_config():
    """Llama 4's CONFIG_MAPPING class is multimodal: the chunk size and layer types live in its text config,
    and the window law's receptive field is read there (it read 0 layers before: radius 0, a false violation)."""
    from tokenlaw.integrations.hf.model_laws import Knobs, receptive_field
    cfg = zoo.config_for("llama4", Knobs(attention_chunk_size=3, layer_types=("chunked_attention",) * 2, kv_heads=1))
    text = cfg.get_text_config()
    assert (text.attention_chunk_size, text.num_key_value_heads) == (3, 1)
    assert receptive_field(cfg) == (None, 3)
    assert receptive_field(zoo.config_for("llama4", Knobs())) == (None, None)     # a full layer: no field


def test_amend_with_laws_replaces_only_those_cells(tmp_path):
    base = ["--arch", "gpt2", "--dtype", "float32", "--examples", "1", "--workers", "1", "--out", str(tmp_path)]
    hf_sweep.main(base + ["--laws", "causality"])
    hf_sweep.main(base + ["--laws", "right_padding", "--amend", "--why", "a test"])
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert sorted(c["law"] for c in doc["cells"]) == ["causality", "right_padding"]
    assert doc["meta"]["amended"][0]["laws"] == ["right_padding"] and doc["meta"]["amended"][0]["why"] == "a test"
    assert "their right_padding cells replace" in (tmp_path / "sweep.md").read_text()
    # a sweep run apart (another folder, another machine) merges the same way
    apart = tmp_path / "apart"
    hf_sweep.main(["--arch", "gpt2", "--dtype", "float32", "--examples", "1", "--workers", "1", "--out", str(apart),
                   "--laws", "causality"])
    hf_sweep.main(["--amend-with", str(apart), "--why", "merged", "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert sorted(c["law"] for c in doc["cells"]) == ["causality", "right_padding"]
    assert [m["why"] for m in doc["meta"]["amended"]] == ["a test", "merged"]
    from tokenlaw.operators.errors import InvalidArgument
    with pytest.raises(InvalidArgument, match="--amend-with"):
        hf_sweep.main(["--amend-with", str(tmp_path / "nowhere"), "--out", str(tmp_path)])


def _doc_repro(name: str) -> str:
    """Run the standalone repro of docs/upstream/NAME.md (its python block) and return what it printed."""
    import contextlib
    import io
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "upstream" / f"{name}.md").read_text()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(re.search(r"```python\n(.*?)```", text, re.S).group(1), {})   # noqa: S102 - our own doc's repro
    return out.getvalue()


def test_the_moshi_and_prophetnet_write_ups_still_reproduce():
    """docs/upstream: if transformers fixes either, this says so (and the finding should go)."""
    moshi = _doc_repro("hf-moshi-sliding-window")
    steps = [float(v) for v in moshi.split("per position: [")[1].split("]")[0].split(",")]
    assert steps[0] < 1e-5 and min(steps[1:]) > 1e-2, moshi                 # cache drops keys the full pass sees
    assert float(moshi.split("editing token 0: ")[1].split()[0]) > 1e-2, moshi  # the full pass ignores the window
    prophet = [float(line.split()[-1]) for line in _doc_repro("hf-prophetnet-right-padding").splitlines()]
    assert prophet[0] > 1e-4 and prophet[2] > 1e-4 and prophet[1] == prophet[3] == 0.0, prophet


def test_the_moshi_and_prophetnet_findings_match_only_their_signature():
    moshi = _row(arch="moshi", law="kv_cache", dtype="float32", detail="|a - b| = 0.07 > bound 1e-6",
                 counterexample={"knobs": {"attn": "eager", "sliding_window": 2}, "pad_left": 0, "pad_right": 0})
    assert sweep.triage(moshi, TRAITS)["id"] == "hf-moshi-sliding-window"
    no_window = {**moshi, "counterexample": {"knobs": {"attn": "eager", "sliding_window": None}}}
    assert sweep.triage(no_window, TRAITS)["kind"] == "untriaged"
    assert sweep.triage({**moshi, "arch": "mistral"}, TRAITS)["kind"] == "untriaged"
    prophet = _row(arch="prophetnet", law="right_padding", dtype="float32", detail="|a - b| = 5.7e-4 > bound 1e-6",
                   counterexample={"knobs": {"attn": "eager"}, "pad_left": 0, "pad_right": 1})
    assert sweep.triage(prophet, TRAITS)["id"] == "hf-prophetnet-padding"
    assert sweep.triage({**prophet, "law": "causality"}, TRAITS)["kind"] == "untriaged"
    assert sweep.triage({**prophet, "counterexample": {"knobs": {}, "pad_left": 1, "pad_right": 0}},
                        TRAITS)["kind"] == "untriaged"
