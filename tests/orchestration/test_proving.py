"""The symbolic tier's executor: each row in a child of its own, here or on Dask; neither changes a verdict."""
from __future__ import annotations

import faulthandler
import os
import signal
import time

import pytest

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import proving, runs
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties.plan import plan

# Cheap operators with proved, refuted and no-symbolic-form rows between them (a few seconds in all).
OPS = ["fir", "standardize", "ostandardize", "offn", "oinject", "layernorm"]


def _judged(results):
    """What a verdict established, without its timing."""
    out = []
    for op, contract, v in results:
        j = v.to_json()
        j.pop("seconds", None)
        out.append((op, contract, j))
    return out


@pytest.fixture(scope="module")
def planned():
    reg = default_registry()
    return reg, list(plan(reg, operators=OPS, dtypes=["float64"]))


def test_here_and_on_a_dask_cluster_give_the_same_verdicts_in_planned_order(planned):
    reg, rows = planned
    one = proving.prove_isolated(reg, rows, timeout=5.0, workers=1)
    seen, clusters = [], []
    two = proving.prove_isolated(reg, rows, timeout=5.0, workers=2, execution=clusters,
                                 progress=lambda row, v: seen.append(row.id))
    assert [(o, c) for o, c, _ in one] == [(r.operator, r.contract) for r in rows]
    statuses = {v.status for _, _, v in one}
    assert {"proved", "refuted"} <= {s.value for s in statuses}, statuses     # the comparison is not vacuous
    assert _judged(one) == _judged(two)
    assert sorted(seen) == sorted(r.id for r in rows)                           # progress saw every row once
    assert len(clusters) == 1 and sum(clusters[0].workers.values()) == len(rows)   # the rows ran on Dask


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_worker_count_names_the_argument(planned, bad):
    reg, rows = planned
    with pytest.raises(InvalidArgument, match="workers"):
        proving.prove_isolated(reg, rows, timeout=5.0, workers=bad)
    with pytest.raises(InvalidArgument, match="workers"):
        runs.ProveSettings(workers=bad)


def test_an_error_in_a_child_reaches_the_caller(planned, monkeypatch):
    reg, rows = planned

    def broken(*a, **k):
        raise ZeroDivisionError("a bug of the tier itself")

    monkeypatch.setattr(proving, "prove_rows", broken)        # inherited by the forked child
    with pytest.raises(ZeroDivisionError, match="a bug of the tier itself"):
        proving.prove_isolated(reg, rows, timeout=5.0, workers=1)


def test_a_child_that_dies_is_reported_not_waited_for(planned, monkeypatch):
    reg, rows = planned
    monkeypatch.setattr(proving, "prove_rows", lambda *a, **k: os._exit(3))
    with pytest.raises(RuntimeError, match="exit code 3"):
        proving.prove_isolated(reg, rows, timeout=5.0, workers=1)


def _segfault_on(row_ids, once_marker=None):
    """A prove_rows that kills its own process with SIGSEGV (as z3 has done) on the rows ``row_ids``; with
    ``once_marker`` (a path) only the first time, the file recording that it happened."""
    real = proving.prove_rows

    def prove_rows(registry, rows, **kw):
        if any(r.id in row_ids for r in rows) and not (once_marker and os.path.exists(once_marker)):
            if once_marker:
                open(once_marker, "w").close()
            # this crash is the test's own: no fatal-error dump of it in the output (pytest's faulthandler,
            # inherited by the forked child, writes past the capture); any other crash still dumps
            faulthandler.disable()
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(registry, rows, **kw)
    return prove_rows


def test_a_row_whose_solver_crashes_once_is_proved_in_a_fresh_child(planned, monkeypatch, tmp_path):
    reg, rows = planned
    alone = proving.prove_isolated(reg, rows[:2], timeout=5.0, workers=1)
    monkeypatch.setattr(proving, "prove_rows", _segfault_on({rows[0].id}, str(tmp_path / "crashed")))
    again = proving.prove_isolated(reg, rows[:2], timeout=5.0, workers=1)
    assert (tmp_path / "crashed").exists()                     # the first child really died
    assert _judged(again) == _judged(alone)


def test_a_row_whose_solver_always_crashes_is_unknown_and_the_rest_finish(planned, monkeypatch):
    reg, rows = planned
    alone = proving.prove_isolated(reg, rows[1:3], timeout=5.0, workers=1)
    monkeypatch.setattr(proving, "prove_rows", _segfault_on({rows[0].id}))
    out = proving.prove_isolated(reg, rows[:3], timeout=5.0, workers=1)
    v = out[0][2]
    assert v.status == V.Status.UNKNOWN and "signal 11" in v.detail and "nothing was established" in v.detail, v.detail
    assert _judged(out[1:]) == _judged(alone)                  # the other rows: the verdicts they get alone


def test_a_row_alone_and_in_a_batch_gets_the_same_verdict():
    # Issue 43, class 8: a verdict must not depend on which rows are proved beside it (a shared z3
    # context and proof cache made one row proved in a batch and sampled alone).  Each row is a child.
    reg = default_registry()
    batch = list(plan(reg, operators=["ostandardize", "fir"], dtypes=["float64"]))
    target = next(r for r in batch if (r.operator, r.contract) == ("ostandardize", "null_receiver"))
    alone = proving.prove_isolated(reg, [target], timeout=5.0, workers=1)
    together = proving.prove_isolated(reg, batch, timeout=5.0, workers=1)
    reversed_ = proving.prove_isolated(reg, batch[::-1], timeout=5.0, workers=1)
    mine = [j for o, c, j in _judged(together) if (o, c) == ("ostandardize", "null_receiver")]
    theirs = [j for o, c, j in _judged(reversed_) if (o, c) == ("ostandardize", "null_receiver")]
    assert _judged(alone)[0][2]["status"] == "proved"            # the comparison is of a real proof
    assert mine == theirs == [_judged(alone)[0][2]]


def test_a_row_that_hangs_is_ended_unknown_and_the_rest_finish(planned, monkeypatch):
    # z3's step and wall-clock limits end a query; a hang outside them (tracing, a replay) must not hang the run
    reg, rows = planned
    alone = proving.prove_isolated(reg, rows[1:3], timeout=5.0, workers=1)
    real = proving.prove_rows

    def hangs(registry, picked, **kw):
        if picked[0].id == rows[0].id:
            time.sleep(3600)
        return real(registry, picked, **kw)
    monkeypatch.setattr(proving, "prove_rows", hangs)
    start = time.monotonic()
    out = proving.prove_isolated(reg, rows[:3], timeout=5.0, workers=1, limit=2.0)
    assert time.monotonic() - start < 60
    v = out[0][2]
    assert v.status == V.Status.UNKNOWN and "wall-clock limit of 2 s" in v.detail and "nothing was established" in v.detail
    assert _judged(out[1:]) == _judged(alone)


def test_the_wall_limit_lies_past_every_solver_backstop():
    # a row that only spends its z3 budgets (each query stopped at BACKSTOP x its slice) is never ended as hung
    from tokenlaw.symbolic import effort
    from tokenlaw.symbolic.prover import CELL_BUDGET
    for timeout in (0.5, 5.0, 30.0):
        assert proving.wall_limit(timeout) > CELL_BUDGET * effort.BACKSTOP * timeout


def test_rows_spread_on_a_running_scheduler_get_the_verdicts_they_get_here(planned):
    # --scheduler: the rows go to a running cluster's worker processes (here one, spawned: it imports tokenlaw
    # itself, probes its CPU paths, unpickles the registry), each forking its rows' children there
    distributed = pytest.importorskip("distributed")
    reg, rows = planned
    here = proving.prove_isolated(reg, rows[:3], timeout=5.0, workers=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        clusters = []
        there = proving.prove_isolated(reg, rows[:3], timeout=5.0, scheduler=cluster.scheduler_address,
                                       execution=clusters)
    assert _judged(there) == _judged(here)
    assert sum(clusters[0].workers.values()) == 3
