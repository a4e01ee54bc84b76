"""The symbolic tier over worker processes: one forked child per row, the same verdicts for any selection.

z3's search depends on the state of its context (the terms made before a
query, their ids, z3's step counter), and a :class:`~tokenlaw.symbolic.prover.ProofCache`
lets one query's proof stand for an identical later one.  Rows proved one
after another in one process therefore see a state that depends on which
rows ran before them: issue 43 saw a row ``proved`` within a batch and
``holds for sampled weights`` alone, at the same seed (an earlier row of the
same operator had proved a shared query, or left the context in a state
where the symbolic-weights query fit its step budget).  Here every row is one
task, run in a child forked from this process before any z3 term exists:
each row starts from the same solver state, an empty cache and its own step
budgets, whichever rows are selected beside it, in whatever order, and
whether one child runs at a time or ``workers`` do.  Neither the selection
nor ``workers`` changes a verdict, only the elapsed time
(``tests/orchestration/test_prove_pool.py`` compares a row alone with the
same row in a batch, and one worker with two).

Forked, not spawned: a user's operator module (``--operators``) and a
mutant's registry copy are inherited, not re-imported; only verdicts cross
the pipe.
"""
from __future__ import annotations

import multiprocessing
import pickle
import queue
import traceback

import torch

from tokenlaw.fuzz.campaign import picklable
from tokenlaw.operators import arguments
from tokenlaw.properties import verdict as V
from tokenlaw.symbolic.prover import prove_rows


# A child killed by a signal before reporting its row (z3 has been seen to segfault inside
# Z3_solver_check_assumptions on a loaded machine, exit -11, and not again on a rerun) gets its row run once
# more in a fresh child; a row whose child dies every time is ``unknown`` with the exit code: the solver
# established nothing, and the run's other rows still finish.
TRIES = 2


def _crashed(exitcode: int) -> V.Verdict:
    return V.Verdict(V.UNKNOWN, detail=f"unknown: the prove process was killed (signal {-exitcode}) before reporting this row, "
                                               f"{TRIES} times (z3 crashed): nothing was established",
                     tier="symbolic", dtype="real")


def by_row(rows) -> list:
    """The planned rows as one task each, [[(index, row)], ...], in planned order."""
    return [[(i, row)] for i, row in enumerate(rows)]


def _child(task, registry, group, timeout, results):
    """A forked child: prove one task's rows (one row), put ('row', index, verdict) per row, then ('done', task, None)."""
    try:
        torch.set_num_threads(1)          # the processes are the parallelism
        rows = [row for _, row in group]
        index = iter(i for i, _ in group)
        prove_rows(registry, rows, timeout=timeout,
                   progress=lambda row, v: results.put(("row", next(index), v)))
        results.put(("done", task, None))
    except BaseException as err:  # noqa: BLE001 -- sent to the parent, which re-raises it
        results.put(("error", None, picklable(err)))


def prove_isolated(registry, rows, *, timeout: float, workers: int = 1, progress=None) -> list:
    """[(operator, contract, Verdict)] in planned order, each row proved in a child of its own.

    ``progress(row, verdict)`` is called in this process as rows finish (in the
    order they finish, which with several workers is not the planned order).
    """
    arguments.count(workers, "workers")
    rows = list(rows)
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    pending, running, out = list(enumerate(by_row(rows))), {}, [None] * len(rows)
    tries = dict.fromkeys(range(len(pending)), 0)
    groups = dict(pending)
    try:
        while pending or running:
            while pending and len(running) < workers:
                task, group = pending.pop(0)
                tries[task] += 1
                running[task] = ctx.Process(target=_child, args=(task, registry, group, timeout, results), daemon=True)
                running[task].start()
            try:
                kind, i, value = results.get(timeout=1.0)
            except queue.Empty:
                dead = [t for t, p in running.items() if not p.is_alive() and p.exitcode not in (0, None)]
                for task in dead:
                    code = running.pop(task).exitcode
                    if code > 0:                       # the child exited on its own: a bug of the tier itself
                        raise RuntimeError(f"a prove worker process died (exit code {code}) before reporting "
                                           f"its row") from None
                    if tries[task] < TRIES:
                        pending.insert(0, (task, groups[task]))        # once more, in a fresh child
                        continue
                    for i, row in groups[task]:
                        if out[i] is None:
                            out[i] = (row.operator, row.contract, _crashed(code))
                            if progress:
                                progress(row, out[i][2])
                continue
            if kind == "error":
                raise value
            if kind == "row":
                out[i] = (rows[i].operator, rows[i].contract, value)
                if progress:
                    progress(rows[i], value)
            else:                              # 'done': that row's child has sent every row
                running.pop(i).join()
    finally:
        for proc in running.values():
            if proc.is_alive():
                proc.terminate()
            proc.join()
    missing = [rows[i].id for i, o in enumerate(out) if o is None]
    if missing:
        raise RuntimeError(f"the prove workers returned no verdict for {missing[:5]}")
    return out
