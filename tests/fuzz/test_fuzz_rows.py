"""CellRunner control: profiles, shards, Dask workers and merging shard reports."""
from __future__ import annotations

import functools
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from tokenlaw.fuzz import rows as rows_module
from tokenlaw.fuzz.rows import CellRunner, parse_shard, run_rows, shard
from tokenlaw.fuzz.cluster import Pool
from tokenlaw.fuzz.replay import replay
from tokenlaw.fuzz.engine import PROFILES
from tokenlaw.reports.document import merge_shard_files as merge
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import runs
from tokenlaw.orchestration.campaigns import CampaignSettings
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


@pytest.fixture(scope="module")
def pool():
    """One Dask LocalCluster of 2 worker processes for this module's tests (closed, workers stopped, after)."""
    with Pool(workers=2) as opened:
        yield opened


def _verdicts(rows) -> list:
    """Every cell's verdict as its report writes it, without the time it took (NaN compares as text)."""
    return [json.dumps({k: v for k, v in c.verdict.to_json().items() if k != "seconds"}, sort_keys=True)
            for r in rows for c in r.cells]


def test_dask_workers_give_the_same_verdicts_as_one_process(pool):
    one = run_rows(REG, plan(REG, **SMALL), examples=15, seed=2, workers=1, replay_dir=None, progress=False)
    two = run_rows(REG, plan(REG, **SMALL), examples=15, seed=2, pool=pool, replay_dir=None, progress=False)
    assert _verdicts(one) == _verdicts(two)
    assert len(pool.execution.workers) == 2, pool.execution.workers       # both workers ran cells
    with pytest.raises(InvalidArgument, match="workers"):
        run_rows(REG, [], workers=0)


def test_dask_workers_run_a_mutants_registry_copy(pool):
    """A mutant's registry holds functions of modules in no sys.modules: the CellRunner ships them by value,
    and the mutant is caught on the workers as in one process."""
    from tokenlaw.fuzz.mutants.seeded import EAGER_MUTANTS

    mutant = next(m for m in EAGER_MUTANTS if m.name == "presence_floor")
    bad = mutant.apply(REG)
    rows = dict(operators=["presence"], dtypes=["float64"])
    one = run_rows(bad, plan(bad, **rows), examples=10, seed=0, workers=1, replay_dir=None, progress=False)
    two = run_rows(bad, plan(bad, **rows), examples=10, seed=0, pool=pool, replay_dir=None, progress=False)
    assert [r.outcome for r in one] == [r.outcome for r in two]
    assert any(r.failing for r in two)
    assert _verdicts(one) == _verdicts(two)


def test_a_worker_error_is_raised_in_the_parent(pool):
    empty = CellRunner(registry={}, examples=1, seed=0)
    with pytest.raises(KeyError, match="nosuchop"):
        list(pool.run(empty, [(0, 0, "nosuchop", "finite", "float64", "eager")]))


def test_a_violation_found_on_a_worker_is_stored_where_the_run_keeps_its_replays(pool, tmp_path):
    rows = plan(REG, operators=["sdpa"], contracts=["null_receiver"], dtypes=["float64"])
    run_rows(REG, rows, examples=10, seed=0, pool=pool, replay_dir=tmp_path / "replays", progress=False)
    rid = rows[0].cells[0].verdict.replay
    assert rid and (tmp_path / "replays" / f"{rid}.json").is_file()
    assert replay(rid, tmp_path / "replays").reproduced


USER_LAW = Path(__file__).resolve().parents[1] / "fixtures" / "user_law.py"   # its own contract too


def test_a_users_py_module_travels_by_value_to_a_process_that_cannot_import_it(tmp_path):
    """The CellRunner of a run whose --operators is a .py file pickles that module by value: a process where the
    file does not exist runs its operator; pickled by reference (no by_value), the same process cannot."""

    src = tmp_path / "ops" / "tl_shipped_ops.py"
    src.parent.mkdir()
    src.write_text(USER_LAW.read_text())
    reg = runs.registry((str(src),))
    shipped = pickle.dumps(CellRunner(reg, 3, 0, by_value=runs.shipped_modules((str(src),))))
    by_name = pickle.dumps(CellRunner(reg, 3, 0))
    src.unlink()                                      # the worker's machine has no such file
    code = ("import pickle, sys; c = pickle.loads(sys.stdin.buffer.read()); "
            "print(c.run((0, 0, 'user_square', 'homogeneity', 'float64', 'eager'), replay_dir=None)[2].status)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and "ops" not in p)}
    ok = subprocess.run([sys.executable, "-c", code], input=shipped, capture_output=True, cwd=tmp_path, env=env,
                        timeout=120)
    assert ok.returncode == 0 and ok.stdout.decode().strip() == "violated", ok.stderr.decode()[-2000:]
    missing = subprocess.run([sys.executable, "-c", code], input=by_name, capture_output=True, cwd=tmp_path,
                             env=env, timeout=120)
    assert missing.returncode != 0 and b"tl_shipped_ops" in missing.stderr


def test_tokenlaws_own_operators_reach_a_worker_by_reference():
    """Unpickled, the default registry's callables are this process's own objects, not by-value copies.

    A copy is another object, and identities the runner relies on break silently: a host's
    ``fn.last_state_of is op.layers`` failed on every Dask worker (the layers functions had no importable
    name), so each closure cell computed the host's layers twice, 1.6x slower, with the same verdicts."""
    shipped = pickle.loads(pickle.dumps(CellRunner(REG, 1, 0))).registry
    copies = [f"{op.name}.{attr}" for op in REG for attr in ("fn", "layers", "weights", "reference")
              if getattr(op, attr, None) is not None and getattr(shipped[op.name], attr) is not getattr(op, attr)
              and not isinstance(getattr(op, attr), functools.partial)]
    assert copies == []
    hosts = [op for op in shipped if getattr(op.fn, "last_state_of", None) is not None]
    assert hosts and all(op.fn.last_state_of is op.layers for op in hosts)


def test_the_row_runner_keeps_no_module_state():
    """Everything a run needs travels in its CellRunner: the module holds no dict, list or set of its own to fill."""
    mutable = {n for n, v in vars(rows_module).items() if isinstance(v, (dict, list, set))}
    assert mutable == {"__builtins__"}          # the contracts travel in the CellRunner's registry (Registry.contracts)
    with pytest.raises(TypeError):              # operators.dtypes.DTYPES is a read-only mapping
        rows_module.DTYPES["float128"] = None


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


@pytest.mark.parametrize("argv, name", [(["campaign", "--minutes", "0"], "--minutes"),
                                        (["campaign", "--minutes", "x"], "--minutes"),
                                        (["campaign", "--minutes", "1", "--scheduler", "nohost"], "--scheduler"),
                                        (["check", "--scheduler", "tcp://nohost"], "--scheduler"),
                                        (["check", "--mutant", "oattn_running_max_two_tile"], "--mutant"),
                                        (["campaign", "--minutes", "1", "--mutant", "nosuch"], "--mutant")])
def test_bad_campaign_arguments_exit_2_naming_the_argument(argv, name, capsys):
    assert main(argv) == 2 and name in capsys.readouterr().err


def test_campaign_settings_refuse_a_time_box_that_is_not_positive():
    for bad in (0, -1, True, "5"):
        with pytest.raises(InvalidArgument, match="--minutes"):
            CampaignSettings(minutes=bad)
