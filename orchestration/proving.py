"""The symbolic tier's executor: every row proved in a process of its own, the rows spread as ``check``'s cells are.

z3's search depends on the state of its context (the terms made before a
query, their ids, z3's step counter), and a :class:`~tokenlaw.symbolic.prover.ProofCache`
lets one query's proof stand for an identical later one.  Rows proved one
after another in one process therefore see a state that depends on which
rows ran before them: issue 43 saw a row ``proved`` within a batch and
``holds for sampled weights`` alone, at the same seed.  Here every row is
proved by :func:`prove_one` in a child forked (``os.fork``) from a process
that has made no z3 term: each row starts from the same solver state, an
empty cache and its own step budgets, whichever rows are selected beside it,
in whatever order, and wherever it runs.

Where the rows run is the same question as for ``check``'s cells
(:func:`~tokenlaw.fuzz.rows.runs_here`): one worker and no scheduler, one
after another in this process; otherwise on the Dask cluster of
:class:`~tokenlaw.fuzz.cluster.Pool` (``--workers N``: a LocalCluster of N
worker threads of this process, each forking its rows' children from it;
``--scheduler ADDR``: a running cluster of worker processes, many machines),
each row one Dask task whose worker forks the row's child.  Neither the selection, nor
``--workers``, nor the cluster changes a verdict, only the elapsed time
(``tests/orchestration/test_proving.py`` compares a row alone with the same
row in a batch, and one worker with two).

What may go wrong in a child, and what the row then says:

- z3 kills it (SIGSEGV inside ``Z3_solver_check_assumptions`` has been seen
  on a loaded machine, once, not again on a rerun): the row is proved once
  more in a fresh child; a row whose child dies :data:`TRIES` times is
  ``unknown`` with the signal: the solver established nothing.
- It runs past :func:`wall_limit` (a hang the solver's own step and
  wall-clock limits did not end): it is killed and the row is ``unknown``,
  saying so; the other rows still finish.
- It raises, or exits on its own: a bug of the tier itself, re-raised here.
"""
from __future__ import annotations

import dataclasses
import os
import pickle
import select
import signal
import time

import cloudpickle
import torch

from tokenlaw.fuzz.rows import picklable, runs_here, shipped
from tokenlaw.fuzz.cluster import Pool
from tokenlaw.operators import arguments
from tokenlaw.properties import verdict as V
from tokenlaw.symbolic import effort
from tokenlaw.symbolic.prover import CELL_BUDGET, prove_rows

# A child killed by a signal before reporting its row gets its row proved once more in a fresh child.
TRIES = 2

# Seconds a row's child may take for the work z3 does not time (tracing the operator into terms, the host
# check, replaying a counterexample on the eager code), on top of its solver time.
WORK_ALLOWANCE = 300.0


def wall_limit(timeout: float) -> float:
    """Seconds after which a row's child is ended as hung: its queries' wall-clock backstops at most
    (:data:`~tokenlaw.symbolic.prover.CELL_BUDGET` budgets, each query stopped by z3 at
    :data:`~tokenlaw.symbolic.effort.BACKSTOP` times its slice) plus :data:`WORK_ALLOWANCE`."""
    return CELL_BUDGET * effort.BACKSTOP * timeout + WORK_ALLOWANCE


def _unknown(detail: str) -> V.Verdict:
    return V.Verdict(V.Status.UNKNOWN, detail=detail, tier="symbolic", dtype="real")


def _crashed(signum: int) -> V.Verdict:
    return _unknown(f"unknown: the prove process was killed (signal {signum}) before reporting this row, "
                    f"{TRIES} times (z3 crashed): nothing was established")


def _hung(limit: float) -> V.Verdict:
    return _unknown(f"unknown: the prove process ran past its wall-clock limit of {limit:g} s and was ended "
                    "(a hang z3's own limits did not stop): nothing was established")


def _child(registry, row, timeout: float, fd: int) -> None:
    """In the forked child: prove ``row``, write ('verdict', Verdict) or ('error', exception) to ``fd``, exit."""
    try:
        torch.set_num_threads(1)          # the processes are the parallelism
        try:
            ((_, _, verdict),) = prove_rows(registry, [row], timeout=timeout)
            data = pickle.dumps(("verdict", verdict))
        except BaseException as err:  # noqa: BLE001 -- sent to the parent, which re-raises it
            data = pickle.dumps(("error", picklable(err)))
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(data)
    finally:                              # no flush of sys.stdout: another thread may have held its lock at the fork
        os._exit(0)


def _in_child(registry, row, timeout: float, limit: float) -> tuple:
    """One try of ``row`` in a forked child: ('verdict', v), ('error', exc), ('signal', n), ('exit', code)
    or ('hung', None)."""
    read, write = os.pipe()
    # A terminal's Ctrl-C reaches the whole process group: the parent alone stops, and ends the child (issue
    # 47).  SIGINT is blocked across the fork, so the child ignores it from its first instruction (else it
    # could raise the parent's KeyboardInterrupt in the parent's code); the parent gets a pending one after.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(read)
        _child(registry, row, timeout, write)
    os.close(write)
    chunks, deadline = [], time.monotonic() + limit
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        while True:
            ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "hung", None
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:                 # Ctrl-C while the child proves: it ends with this process's run
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "signal", os.WTERMSIG(status)
    if os.WEXITSTATUS(status) or not chunks:
        return "exit", os.WEXITSTATUS(status)
    return pickle.loads(b"".join(chunks))


def prove_one(registry, row, *, timeout: float, limit: float | None = None) -> V.Verdict:
    """The verdict of one planned row, proved in a child forked from this process (see the module)."""
    limit = wall_limit(timeout) if limit is None else limit
    for _ in range(TRIES):
        kind, value = _in_child(registry, row, timeout, limit)
        if kind == "verdict":
            return value
        if kind == "error":
            raise value
        if kind == "exit":
            raise RuntimeError(f"a prove worker process died (exit code {value}) before reporting its row")
        if kind == "hung":
            return _hung(limit)
    return _crashed(value)


@dataclasses.dataclass
class Job:
    """What every row of one ``prove`` needs on a Dask worker: the registry and the budget.

    Pickled once per run and replicated to every worker, with cloudpickle, the modules named in
    ``by_value`` (a user's ``.py`` file) by value, as a check's :class:`~tokenlaw.fuzz.rows.CellRunner`."""

    registry: object
    timeout: float
    limit: float | None = None
    by_value: tuple = ()

    def run(self, item):
        index, row = item
        return index, prove_one(self.registry, row, timeout=self.timeout, limit=self.limit)

    def __reduce__(self):
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return _unship, (shipped(fields, self.by_value),)


def _unship(data: bytes) -> Job:
    return Job(**cloudpickle.loads(data))


def prove_isolated(registry, rows, *, timeout: float, workers: int = 1, scheduler: str | None = None,
                   progress=None, by_value=(), limit: float | None = None, execution=None) -> list:
    """[(operator, contract, Verdict)] in planned order, each row proved in a child of its own.

    ``workers`` / ``scheduler``: where the rows run (the module's rule, that of ``check``'s cells).
    ``progress(row, verdict)`` is called in this process as rows finish (in the order they finish, which
    on a cluster is not the planned order).  ``execution``: a list that receives the cluster's
    :class:`~tokenlaw.fuzz.cluster.Execution` record when the rows ran on Dask.
    """
    arguments.count(workers, "workers")
    rows = list(rows)
    out = [None] * len(rows)

    def done(i, verdict):
        out[i] = (rows[i].operator, rows[i].contract, verdict)
        if progress:
            progress(rows[i], verdict)

    if runs_here(workers, scheduler, len(rows)):
        for i, row in enumerate(rows):
            done(i, prove_one(registry, row, timeout=timeout, limit=limit))
    else:
        job = Job(registry, timeout, limit, tuple(by_value))
        with Pool(min(workers, len(rows)) if scheduler is None else workers, scheduler, threads=True) as pool:
            for i, verdict in pool.each(job, list(enumerate(rows)), name="prove"):
                done(i, verdict)
            if execution is not None:
                execution.append(pool.execution)
    missing = [rows[i].id for i, o in enumerate(out) if o is None]
    if missing:
        raise RuntimeError(f"the prove workers returned no verdict for {missing[:5]}")
    return out
