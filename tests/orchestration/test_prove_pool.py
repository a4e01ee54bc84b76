"""The symbolic tier over worker processes: the worker count changes the time, never a verdict."""
from __future__ import annotations

import os
import signal

import pytest

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.orchestration import prove_pool, runs
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


def test_one_worker_and_two_give_the_same_verdicts_in_planned_order(planned):
    reg, rows = planned
    one = prove_pool.prove_isolated(reg, rows, timeout=5.0, workers=1)
    two = prove_pool.prove_isolated(reg, rows, timeout=5.0, workers=2)
    assert [(o, c) for o, c, _ in one] == [(r.operator, r.contract) for r in rows]
    statuses = {v.status for _, _, v in one}
    assert {"proved", "refuted"} <= {s.value for s in statuses}, statuses     # the comparison is not vacuous
    assert _judged(one) == _judged(two)


def test_progress_sees_every_row_once(planned):
    reg, rows = planned
    seen = []
    prove_pool.prove_isolated(reg, rows[:6], timeout=5.0, workers=2, progress=lambda row, v: seen.append(row.id))
    assert sorted(seen) == sorted(r.id for r in rows[:6])


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_worker_count_names_the_argument(planned, bad):
    reg, rows = planned
    with pytest.raises(InvalidArgument, match="workers"):
        prove_pool.prove_isolated(reg, rows, timeout=5.0, workers=bad)
    with pytest.raises(InvalidArgument, match="workers"):
        runs.ProveSettings(workers=bad)


def test_an_error_in_a_child_reaches_the_caller(planned, monkeypatch):
    reg, rows = planned

    def broken(*a, **k):
        raise ZeroDivisionError("a bug of the tier itself")

    monkeypatch.setattr(prove_pool, "prove_rows", broken)        # inherited by the forked child
    with pytest.raises(ZeroDivisionError, match="a bug of the tier itself"):
        prove_pool.prove_isolated(reg, rows, timeout=5.0, workers=2)


def test_a_child_that_dies_is_reported_not_waited_for(planned, monkeypatch):
    reg, rows = planned
    monkeypatch.setattr(prove_pool, "prove_rows", lambda *a, **k: os._exit(3))
    with pytest.raises(RuntimeError, match="exit code 3"):
        prove_pool.prove_isolated(reg, rows, timeout=5.0, workers=1)


def _segfault_on(row_ids, once_marker=None):
    """A prove_rows that kills its own process with SIGSEGV (as z3 has done) on the rows ``row_ids``; with
    ``once_marker`` (a path) only the first time, the file recording that it happened."""
    real = prove_pool.prove_rows

    def prove_rows(registry, rows, **kw):
        if any(r.id in row_ids for r in rows) and not (once_marker and os.path.exists(once_marker)):
            if once_marker:
                open(once_marker, "w").close()
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(registry, rows, **kw)
    return prove_rows


def test_a_row_whose_solver_crashes_once_is_proved_in_a_fresh_child(planned, monkeypatch, tmp_path):
    reg, rows = planned
    alone = prove_pool.prove_isolated(reg, rows[:2], timeout=5.0, workers=1)
    monkeypatch.setattr(prove_pool, "prove_rows", _segfault_on({rows[0].id}, str(tmp_path / "crashed")))
    again = prove_pool.prove_isolated(reg, rows[:2], timeout=5.0, workers=1)
    assert (tmp_path / "crashed").exists()                     # the first child really died
    assert _judged(again) == _judged(alone)


def test_a_row_whose_solver_always_crashes_is_unknown_and_the_rest_finish(planned, monkeypatch):
    reg, rows = planned
    alone = prove_pool.prove_isolated(reg, rows[1:3], timeout=5.0, workers=1)
    monkeypatch.setattr(prove_pool, "prove_rows", _segfault_on({rows[0].id}))
    out = prove_pool.prove_isolated(reg, rows[:3], timeout=5.0, workers=2)
    v = out[0][2]
    assert v.status == V.UNKNOWN and "signal 11" in v.detail and "nothing was established" in v.detail, v.detail
    assert _judged(out[1:]) == _judged(alone)                  # the other rows: the verdicts they get alone


def test_a_row_alone_and_in_a_batch_gets_the_same_verdict():
    # Issue 43, class 8: a verdict must not depend on which rows are proved beside it (a shared z3
    # context and proof cache made one row proved in a batch and sampled alone).  Each row is a child.
    reg = default_registry()
    batch = list(plan(reg, operators=["ostandardize", "fir"], dtypes=["float64"]))
    target = next(r for r in batch if (r.operator, r.contract) == ("ostandardize", "null_receiver"))
    alone = prove_pool.prove_isolated(reg, [target], timeout=5.0, workers=1)
    together = prove_pool.prove_isolated(reg, batch, timeout=5.0, workers=1)
    reversed_ = prove_pool.prove_isolated(reg, batch[::-1], timeout=5.0, workers=2)
    mine = [j for o, c, j in _judged(together) if (o, c) == ("ostandardize", "null_receiver")]
    theirs = [j for o, c, j in _judged(reversed_) if (o, c) == ("ostandardize", "null_receiver")]
    assert _judged(alone)[0][2]["status"] == "proved"            # the comparison is of a real proof
    assert mine == theirs == [_judged(alone)[0][2]]
