"""The pn_fir_tau paper's behavioural experiments at their quick presets: the direction of each effect it claims.

Each test runs an experiment (seeded, deterministic) and checks one direction with a predicate, then checks the
same predicate with the operators swapped is false: the test can fail, and it fails when the roles are swapped.
The reported full-size numbers are in each module's docstring and in ``tokenlaw reproduce <name>``'s report.
"""
from __future__ import annotations

import json

import pytest
import torch

from tokenlaw.app.cli import main
from tokenlaw.experiments import distractors, recall, recall_tasks, sink, tiny_attention, unanswerable
from tokenlaw.experiments.paper_figures import Status
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.xp import TORCH


def above(summary: dict, better: str, worse: str, measure: str) -> bool:
    """``better``'s worst seed beats ``worse``'s best seed on ``measure`` (higher is better)."""
    return summary[better][measure]["min"] > summary[worse][measure]["max"]


def below(summary: dict, lower: str, higher: str, measure: str) -> bool:
    """``lower``'s highest seed is under ``higher``'s lowest seed on ``measure``."""
    return summary[lower][measure]["max"] < summary[higher][measure]["min"]


@pytest.fixture(scope="module")
def recall_result():
    return recall.run(recall.QUICK)


def test_sm_fir_recalls_more_than_softmax(recall_result):
    s = recall_result["summary"]
    assert above(s, "sm_fir", "softmax", "accuracy")
    assert not above(s, "softmax", "sm_fir", "accuracy")          # swapped: fails
    fig, = recall.figures(recall_result)
    assert fig["status"] in {st.value for st in Status} and fig["seeds"] == recall.QUICK.seeds


def test_recall_runs_are_deterministic(recall_result):
    again = recall.run(recall.QUICK)
    assert [r["evaluation"] for r in again["runs"]] == [r["evaluation"] for r in recall_result["runs"]]
    assert [r["curve"] for r in again["runs"]] == [r["curve"] for r in recall_result["runs"]]


def test_pn_fir_tau_recalls_under_distractors_at_least_as_well_as_pn_and_pn_fir_c():
    s = distractors.run(distractors.QUICK)["summary"]

    def mean_accuracy(n):
        return sum(v["mean"] for v in s[n]["accuracy"].values()) / len(s[n]["accuracy"])

    for other in ("pn", "pn_fir_c"):
        assert mean_accuracy("pn_fir_tau") >= mean_accuracy(other)
        assert not mean_accuracy(other) >= mean_accuracy("pn_fir_tau")      # swapped: fails


def test_pn_fir_tau_unanswerable_mass_is_below_softmax():
    result = unanswerable.run(unanswerable.QUICK)
    s = result["summary"]
    assert below(s, "pn_fir_tau", "sm_fir", "unanswerable_mass")
    assert not below(s, "sm_fir", "pn_fir_tau", "unanswerable_mass")   # swapped: fails
    # the simplex map's row mass is 1 on every row, by construction
    assert abs(s["sm_fir"]["unanswerable_mass"]["mean"] - 1.0) < 1e-5
    assert [f["figure"] for f in unanswerable.figures(result)] == ["hallucination on unanswerable queries",
                                                                    "unanswerable-row attention mass"]


def test_pn_fir_tau_sink_mass_is_below_softmax():
    s = sink.run(sink.QUICK)["summary"]
    assert below(s, "pn_fir_tau", "softmax", "sink_mass")
    assert not below(s, "softmax", "pn_fir_tau", "sink_mass")            # swapped: fails


@pytest.mark.parametrize("name", ["sm_fir", "pn", "pn_fir_c", "pn_fir_tau"])
def test_the_trained_layer_is_the_registered_operator(name):
    """The layer's output is the registered operator's, bit for bit: training uses the verified math."""
    torch.manual_seed(0)
    layer = tiny_attention.Attention(8, 2, name).double()
    x = torch.randn(2, 9, 8, dtype=torch.float64)
    params = dict(wq=layer.wq, bq=layer.bq, wk=layer.wk, bk=layer.bk, wv=layer.wv, bv=layer.bv, wo=layer.wo, heads=2)
    if name == "pn_fir_tau":
        params["tau"] = layer.tau
    out, w = layer(x)
    assert torch.equal(out, tiny_attention.registry()[name](TORCH, x, **params))
    assert torch.equal(torch.triu(w, diagonal=1), torch.zeros_like(w))       # causal weights recorded


def test_recall_batches_answer_their_queries():
    b = recall_tasks.batch(torch.Generator().manual_seed(0), 64, pairs=3, keys=6, values=5, unanswerable=0.5)
    for tokens, target, answerable in zip(b.tokens, b.targets, b.answerable):
        keys, values, query = tokens[0:6:2].tolist(), tokens[1:6:2].tolist(), int(tokens[-1])
        if answerable:
            assert int(target) == values[keys.index(query)] - 6
        else:
            assert query not in keys and int(target) == 5
    assert 0 < int(b.answerable.sum()) < 64


@pytest.mark.parametrize("bad, name", [
    (lambda: recall.run(recall.Config(normalisers=("softmax", "nope"))), "normalisers"),
    (lambda: recall.run(recall.Config(seeds=0)), "seeds"),
    (lambda: recall_tasks.batch(torch.Generator(), 4, pairs=5, keys=5, values=3, unanswerable=0.5), "keys"),
    (lambda: sink.run(sink.Config(lr=-1.0)), "lr"),
    (lambda: tiny_attention.Attention(8, 3, "sm_fir"), "heads"),
])
def test_bad_settings_are_refused_naming_the_argument(bad, name):
    with pytest.raises(InvalidArgument, match=name):
        bad()


def test_reproduce_command_writes_report_json_and_plots(tmp_path, capsys):
    assert main(["reproduce", "recall", "--quick", "--seeds", "1", "--out", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["result"] == "PASS" and out["figures"][0]["figure"] == "single-layer associative recall"
    saved = json.loads((tmp_path / "recall.json").read_text())
    assert saved["config"]["seeds"] == 1 and len(saved["runs"]) == 2
    assert (tmp_path / "recall.md").read_text().startswith("# Single-layer associative recall")
    assert (tmp_path / "recall_curves.svg").read_text().startswith("<svg")
    assert main(["reproduce", "recall", "--seeds", "0", "--out", str(tmp_path)]) == 2
