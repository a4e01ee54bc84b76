"""The symbolic tier over worker processes: one forked child per operator, the same verdicts for any count.

z3's search depends on the state of its context (the terms made before a
query, their ids), and :func:`tokenlaw.symbolic.prover.prove_rows` shares
one :class:`~tokenlaw.symbolic.prover.ProofCache` across the rows it is
given.  So rows split over processes in an arbitrary way could be judged
differently from a serial run.  Here each operator's rows are one task, and
every task runs in a child forked from this process before any z3 term of
any operator exists: its rows see the same solver state, the same cache
(its own) and the same step budgets whether one child runs at a time or
``workers`` do.  ``workers`` therefore changes only the elapsed time, never
a verdict (``tests/orchestration/test_prove_pool.py`` compares the two).

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
from tokenlaw.symbolic.prover import prove_rows


def by_operator(rows) -> list:
    """The planned rows as [[(index, row), ...] per operator], in the order operators first appear."""
    groups: dict = {}
    for i, row in enumerate(rows):
        groups.setdefault(row.operator, []).append((i, row))
    return list(groups.values())


def _child(task, registry, group, timeout, results):
    """A forked child: prove one operator's rows, put ('row', index, verdict) per row, then ('done', task, None)."""
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
    """[(operator, contract, Verdict)] in planned order, each operator proved in a child of its own.

    ``progress(row, verdict)`` is called in this process as rows finish (in the
    order they finish, which with several workers is not the planned order).
    """
    arguments.count(workers, "workers")
    rows = list(rows)
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    pending, running, out = list(enumerate(by_operator(rows))), {}, [None] * len(rows)
    try:
        while pending or running:
            while pending and len(running) < workers:
                task, group = pending.pop(0)
                running[task] = ctx.Process(target=_child, args=(task, registry, group, timeout, results), daemon=True)
                running[task].start()
            try:
                kind, i, value = results.get(timeout=1.0)
            except queue.Empty:
                dead = [p for p in running.values() if not p.is_alive() and p.exitcode not in (0, None)]
                if dead:
                    raise RuntimeError(f"a prove worker process died (exit code {dead[0].exitcode}) before "
                                       f"reporting its operator's rows") from None
                continue
            if kind == "error":
                raise value
            if kind == "row":
                out[i] = (rows[i].operator, rows[i].contract, value)
                if progress:
                    progress(rows[i], value)
            else:                              # 'done': that operator's child has sent every row
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
