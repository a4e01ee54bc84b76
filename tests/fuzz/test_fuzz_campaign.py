"""Campaign control: profiles, shards, worker processes and merging shard reports."""
from __future__ import annotations

import json

import pytest

from tokenlaw.fuzz import campaign as campaign_module
from tokenlaw.fuzz.campaign import Campaign, _forked, parse_shard, run_rows, shard
from tokenlaw.fuzz.engine import PROFILES
from tokenlaw.reports.document import merge_shard_files as merge
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.plan import plan
from tokenlaw.app.cli import main

REG = default_registry()
SMALL = dict(operators=["sdpa", "presence"], dtypes=["float32", "bfloat16"])


def test_profiles_grow_and_quick_has_at_least_100_examples():
    assert PROFILES["quick"] >= 100
    assert PROFILES["quick"] < PROFILES["default"] < PROFILES["deep"]


def test_shards_partition_the_rows():
    rows = plan(REG)
    parts = [shard(rows, i, 3) for i in (1, 2, 3)]
    ids = [r.id for p in parts for r in p]
    assert sorted(ids) == sorted(r.id for r in rows) and len(ids) == len(set(ids))


@pytest.mark.parametrize("bad", ["0/2", "3/2", "x", "1/0", "1-2"])
def test_bad_shard_is_rejected(bad):
    with pytest.raises(InvalidArgument, match="--shard"):
        parse_shard(bad)


def test_workers_give_the_same_outcomes_as_one_process():
    one = run_rows(REG, plan(REG, **SMALL), examples=15, seed=2, workers=1, replay_dir=None, progress=False)
    two = run_rows(REG, plan(REG, **SMALL), examples=15, seed=2, workers=2, replay_dir=None, progress=False)
    assert [(r.id, r.outcome) for r in one] == [(r.id, r.outcome) for r in two]
    assert [[c.verdict.examples for c in r.cells] for r in one] == [[c.verdict.examples for c in r.cells] for r in two]
    with pytest.raises(InvalidArgument, match="workers"):
        run_rows(REG, [], workers=0)


def test_forked_workers_run_a_mutants_registry_copy_that_cannot_be_pickled():
    """The campaign object is inherited by fork, not pickled: a mutant's registry (functions of modules that
    are in no sys.modules) runs on 2 workers and is caught there as in one process."""
    from tokenlaw.fuzz.mutants import EAGER_MUTANTS

    mutant = next(m for m in EAGER_MUTANTS if m.name == "presence_floor")
    bad = mutant.apply(REG)
    rows = dict(operators=["presence"], dtypes=["float64"])
    one = run_rows(bad, plan(bad, **rows), examples=10, seed=0, workers=1, replay_dir=None, progress=False)
    two = run_rows(bad, plan(bad, **rows), examples=10, seed=0, workers=2, replay_dir=None, progress=False)
    assert [r.outcome for r in one] == [r.outcome for r in two]
    assert any(r.failing for r in two)


def test_a_worker_error_is_raised_in_the_parent():
    empty = Campaign(registry={}, examples=1, seed=0)
    with pytest.raises(KeyError, match="nosuchop"):
        list(_forked(empty, [(0, 0, "nosuchop", "finite", "float64", "eager")], 2))


def test_the_campaign_keeps_no_module_state():
    """Everything a run needs travels in its Campaign: the module holds no dict, list or set of its own to fill."""
    mutable = {n for n, v in vars(campaign_module).items() if isinstance(v, (dict, list, set))}
    assert mutable == {"__builtins__"}          # the contracts travel in the Campaign's registry (Registry.contracts)
    with pytest.raises(TypeError):              # operators.dtypes.DTYPES is a read-only mapping
        campaign_module.DTYPES["float128"] = None


def test_shard_reports_merge_into_the_full_report(tmp_path, capsys):
    common = ["--operator", "sdpa", "--operator", "presence", "--dtype", "float32", "--examples", "10",
              "--database", "none", "--replays", str(tmp_path / "replays")]
    for i in (1, 2):
        assert main(["check", *common, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}")]) == 0
    assert main(["check", *common, "--out", str(tmp_path / "full")]) == 0
    code = main(["report", "merge", str(tmp_path / "s1" / "conformance.json"), str(tmp_path / "s2" / "conformance.json"),
                 "--out", str(tmp_path / "merged")])
    assert code == 0
    merged = json.loads((tmp_path / "merged" / "conformance.json").read_text())
    full = json.loads((tmp_path / "full" / "conformance.json").read_text())
    assert sorted(r["id"] for r in merged["rows"]) == sorted(r["id"] for r in full["rows"])
    assert {r["id"]: r["outcome"] for r in merged["rows"]} == {r["id"]: r["outcome"] for r in full["rows"]}
    assert "replay" in (tmp_path / "merged" / "conformance.md").read_text()   # violations link their replay ids


def test_merge_rejects_conflicting_rows(tmp_path):
    a = {"rows": [{"id": "x-y", "operator": "x", "contract": "null_receiver", "declared": "claims", "reason": "r",
                   "outcome": "holds", "cells": []}]}
    b = json.loads(json.dumps(a))
    b["rows"][0]["reason"] = "other"
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    with pytest.raises(InvalidArgument, match="differs"):
        merge([tmp_path / "a.json", tmp_path / "b.json"])
    with pytest.raises(InvalidArgument, match="cannot read"):
        merge([tmp_path / "missing.json"])
