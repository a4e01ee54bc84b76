"""The gate as a library call: the recorded runs become settings objects by tier, and each re-runs itself."""
from __future__ import annotations

import pytest

import tokenlaw
from tokenlaw.orchestration import gate, runs
from tokenlaw.properties.verdict import Tier
from tokenlaw.reports import document
from tokenlaw.reports.meta import RunMeta


def test_each_recorded_run_becomes_its_tiers_settings():
    fuzz = {"tier": "fuzz", "backend": "eager", "profile": "smoke", "examples": 3, "seed": 7,
            "scope": {"operators": ["sdpa"], "contracts": ["closure"]}}
    symbolic = {"tier": "symbolic", "backend": "z3", "timeout": 2.0, "scope": {"operators": ["sdpa"]}}
    c, p = (gate.recorded_settings(RunMeta.from_json(run), out="o") for run in (fuzz, symbolic))
    assert type(c) is runs.CheckSettings and (c.seed, c.examples, c.operators, c.tier) == (7, 3, ("sdpa",), Tier.FUZZ)
    assert type(p) is runs.ProveSettings and (p.timeout, p.operators, p.tier) == (2.0, ("sdpa",), Tier.SYMBOLIC)
    assert type(gate.recorded_settings(RunMeta.from_json({}), out="o")) is runs.CheckSettings   # before meta.tier
    assert type(gate.recorded_settings(None, out="o")) is runs.CheckSettings       # no baseline: a default check
    with pytest.raises(ValueError, match="meta.tier"):
        RunMeta.from_json({"tier": "combined"})                                   # not a run: refused at the edge


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """One float64 cell, two examples: the smallest run the gate can re-run."""
    out = tmp_path_factory.mktemp("gate")
    settings = runs.CheckSettings(operators=["sdpa"], contracts=["simplex"], dtypes=["float64"], examples=2,
                                  out=str(out / "a"))
    return runs.check(settings), out


def test_the_gate_reruns_a_small_baseline_and_finds_it_unchanged(small):
    doc, out = small
    base = document.Document.from_json(doc.stable_json())
    result = tokenlaw.gate(base, out=str(out / "b"))
    assert result.ok and result.live == () and result.comparison.regressions == []
    assert [c.id for c in result.current.cells] == [c.id for c in base.cells] == ["sdpa-simplex-eager-float64"]


def test_a_regression_against_the_baseline_is_live(small):
    cur, _ = small
    forged = cur.stable_json()
    for row in forged["rows"]:              # a baseline where the row was proved: holds now is a lost proof
        for cell in row["cells"]:
            cell["verdict"]["status"] = "proved"
    result = gate.gate(document.Document.from_json(forged), cur)
    assert not result.ok and result.live and all(c.kind == "proof-lost" for c, _ in result.live)
