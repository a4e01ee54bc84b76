"""``tokenlaw reproduce ablation`` and ``retrofit`` on tiny configurations (the reported runs are in docs/closure.md)."""
from __future__ import annotations

import json

import pytest
import torch

from tokenlaw.app.cli import main
from tokenlaw.experiments import ablation
from tokenlaw.experiments.tabular_model import TabularRegressor, swapped
from tokenlaw.experiments import tabular_tasks as T

TINY = ablation.Config(width=8, tokens=4, seeds=2, gains=(2.0,), positions=(0, 4), sweep_widths=(8,), sweep_gains=(1.0,))


def test_ablation_attributes_the_reactivation():
    rows = {r["variant"]: r for r in ablation.run(TINY)["rows"]}
    # closed hosts give exactly 0.0 in float64 (left-fold reductions), not merely small
    for closed in ("otransformer", "oa_offn_plain_norm"):
        assert rows[closed]["old_shift_max"] == 0.0 and rows[closed]["null_max"] == 0.0
    oa = rows["oa_only"]
    assert oa["old_shift_max"] > 1e-2
    assert oa["attribution"] == dict(first_nonzero_component="block0.norm1", null_reactivated_in_stream_by="block0.ffn",
                                     old_tokens_first_moved_at="block1.attn")
    assert rows["oa_onorm_plain_ffn"]["attribution"]["null_reactivated_in_stream_by"] == "block0.ffn"
    assert rows["standard"]["attribution"]["old_tokens_first_moved_at"] == "block0.attn"
    assert rows["sdpa_onorm_offn"]["attribution"]["null_reactivated_in_stream_by"] == "block0.attn"


def test_swapped_models_share_weights_and_differ_only_by_gating():
    torch.manual_seed(0)
    arch = dict(width=8, heads=2, depth=1, hidden=16)
    base = TabularRegressor(**arch).double().eval()
    x, y = T.dataset("linear", 0, 6, 3)
    x, y = x.double(), y.double()
    with torch.no_grad():
        ref = base(x, y, 6)
        tiny_tau = swapped(base, "hidden_carrier", 1e-12, **arch)(x, y, 6)   # rho -> 1: softmax reduction
        full = swapped(base, "full_o", 1e-12, **arch)(x, y, 6)
        far = swapped(base, "full_o", 100.0, **arch)(x, y, 6)
    assert (tiny_tau - ref).abs().max() < 1e-4 and (full - ref).abs().max() < 1e-4   # eps_den = 1e-6 remains
    assert (far - ref).abs().max() > 1e-3


def test_reproduce_commands_write_their_reports(tmp_path, capsys):
    assert main(["reproduce", "ablation", "--width", "8", "--seeds", "1", "--gains", "2",
                 "--sweep-widths", "8", "--out", str(tmp_path)]) == 0
    abl = json.loads((tmp_path / "ablation.json").read_text())
    assert {r["variant"] for r in abl["rows"]} >= {"standard", "oa_only", "otransformer"}
    assert main(["reproduce", "retrofit", "--quick", "--out", str(tmp_path)]) == 0
    ret = json.loads((tmp_path / "retrofit.json").read_text())
    assert len(ret["evaluation"]["pairs"]) >= 18
    assert (tmp_path / "retrofit.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["reproduce", "retrofit", "--quick", "--out", str(tmp_path)]) == 0   # cached weights reused
    assert json.loads((tmp_path / "retrofit.json").read_text())["cached"] is True
    assert main(["reproduce", "ablation", "--width", "0"]) == 2


def test_retrofit_training_is_deterministic():
    from tokenlaw.experiments.retrofit import QUICK, train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)          # as the command does
    try:
        a, curve_a = train(QUICK, log=lambda s: None)
        b, curve_b = train(QUICK, log=lambda s: None)
    finally:
        torch.set_num_threads(threads)
    assert curve_a == curve_b
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
