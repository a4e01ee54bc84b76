"""A seed draws the same inputs whatever local source is loaded (what lets the gate compare two runs).

Hypothesis mines literal constants from every loaded local module and draws
some numbers from them; ``fuzz.engine.pinned_constants`` keeps that pool
empty during a search.  Here a module full of literals -- what an edit to
tokenlaw's own source, or a user's operator module, adds -- is imported
between two runs of the same cell and seed: the drawn cases are the same.
Without the pin they are not (the attack below), so the test can fail.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import sys

import torch

from tokenlaw.fuzz import engine
from tokenlaw.properties.catalogue import CONTRACTS
from tokenlaw.reports.meta import RunMeta
from tokenlaw.reports.regressions import comparable


SEEDS = range(4)


def drawn(registry, seed):
    """Every case ``run_cell`` judged for oattention / permutation_equivariance in float32, in order."""
    seen = []
    base = CONTRACTS["permutation_equivariance"]

    def recording(case):
        seen.append(json.dumps(case.describe(), sort_keys=True, default=str))
        return base.fn(case)

    engine.run_cell(registry["oattention"], dataclasses.replace(base, fn=recording), torch.float32,
                    examples=40, seed=seed, replay_dir=None)
    return seen


def import_literals(tmp_path, monkeypatch, name, start):
    """Load a new local module whose literals fall in the strategies' ranges (seeds, scales, offsets).

    (Hypothesis skips integers in (-100, 100), which it favours anyway.)"""
    values = [*range(start, start + 300), *(-i for i in range(start, start + 300)), *(start + i / 7 for i in range(200))]
    (tmp_path / f"{name}.py").write_text("\n".join(f"C{i} = {v!r}" for i, v in enumerate(values)) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)     # so that teardown removes it again
    monkeypatch.setitem(sys.modules, name, importlib.import_module(name))


def test_a_seed_draws_the_same_inputs_whatever_local_source_is_loaded(registry, tmp_path, monkeypatch):
    before = [drawn(registry, seed) for seed in SEEDS]
    import_literals(tmp_path, monkeypatch, "tokenlaw_test_literals_pinned", start=100)
    after = [drawn(registry, seed) for seed in SEEDS]
    assert all(len(cases) >= 40 for cases in before) and after == before


def test_without_the_pin_a_new_local_module_changes_the_draws(registry, tmp_path, monkeypatch):
    """The attack: the same two runs with the pool left to Hypothesis draw different inputs."""
    monkeypatch.setattr(engine, "pinned_constants", contextlib.nullcontext)
    before = [drawn(registry, seed) for seed in SEEDS]
    import_literals(tmp_path, monkeypatch, "tokenlaw_test_literals_unpinned", start=400)
    after = [drawn(registry, seed) for seed in SEEDS]
    assert after != before


def test_the_reports_meta_says_whether_draws_are_pinned():
    assert "local constants pinned out" in engine.draws()


def run(draws):
    """The runs of a document (``Document.runs``): one eager fuzz run."""
    return [RunMeta.from_json(dict(tier="fuzz", backend="eager", seed=0, examples=10, profile="smoke", draws=draws))]


def test_the_gate_compares_inputs_only_between_pinned_runs_of_one_hypothesis():
    pinned = "hypothesis 6.155.2, local constants pinned out"
    assert comparable(run(pinned), run(pinned)) == {"eager": True}
    assert comparable(run(pinned), run("hypothesis 6.156.0, local constants pinned out")) == {"eager": False}
    assert comparable(run(pinned), run(None)) == {"eager": False}          # a baseline from before the pin
    unpinned = "hypothesis 6.155.2, local constants mixed in"
    assert comparable(run(unpinned), run(unpinned)) == {"eager": False}
