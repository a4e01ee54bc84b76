"""Run planned rows on the fuzz tier: shards, worker processes, progress with examples/second.

A campaign is a list of rows (``tokenlaw.properties.plan``).  ``shard(rows,
i, n)`` keeps every n-th row, so n machines split a campaign and ``tokenlaw
report merge`` joins their reports; ``run_rows(..., workers=N)`` spreads the
cells of one machine over N processes (forked, so they inherit the run's
:class:`Campaign`: its registry, a mutant's copy included).  Every cell is judged by
:func:`tokenlaw.fuzz.engine.run_cell`.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import pickle
import queue
import sys
import time
import traceback

import torch

from tokenlaw.operators import arguments
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import contracts_of

from . import engine
from . import replay as R
from .database import open_database
from .engine import run_cell


def parse_shard(text: str | None) -> tuple[int, int]:
    """'i/n' (1 <= i <= n) -> (i, n); None -> (1, 1)."""
    if text is None:
        return 1, 1
    try:
        i, n = (int(p) for p in str(text).split("/"))
    except ValueError:
        raise InvalidArgument(f"--shard: expected i/n such as 2/4, got {text!r}") from None
    if not (n >= 1 and 1 <= i <= n):
        raise InvalidArgument(f"--shard: expected 1 <= i <= n, got {text!r}")
    return i, n


def shard(rows, i: int, n: int) -> list:
    """Rows i, i+n, i+2n, ... (1-based i): a deterministic split that keeps rows whole."""
    return [r for k, r in enumerate(rows) if k % n == i - 1]


@dataclasses.dataclass
class Campaign:
    """What every cell of one run needs: the registry (the mutant's copy under ``tokenlaw mutate``) and the options.

    ``run_rows`` makes one per run and hands it to each worker process; the
    database is opened lazily by the process that uses it (a Redis client must
    not cross a fork).  Nothing of a run outlives it.
    """

    registry: object
    examples: int
    seed: int
    database: object = None
    replay_dir: object = None
    mutant: str | None = None
    _db: object = dataclasses.field(default=None, repr=False)

    def run(self, task):
        """(row index, cell index, Verdict) of one planned cell."""
        r, c, op_name, contract, dtype, backend = task
        if self._db is None:
            self._db = open_database(self.database)
        v = run_cell(self.registry[op_name], contracts_of(self.registry)[contract], DTYPES[dtype], examples=self.examples,
                     seed=self.seed, backend=backend, database=self._db, replay_dir=self.replay_dir,
                     mutant=self.mutant)
        return r, c, v

    def serve(self, tasks, results):
        """A forked worker: run tasks from ``tasks`` until None, put ('ok', result) or ('error', exc) on ``results``."""
        torch.set_num_threads(1)          # the processes are the parallelism
        self._db = None                   # this process opens its own
        for task in iter(tasks.get, None):
            try:
                results.put(("ok", self.run(task)))
            except BaseException as err:  # noqa: BLE001 -- handed to the parent, which raises it
                results.put(("error", picklable(err)))


def picklable(err: BaseException) -> BaseException:
    try:
        pickle.dumps(err)
        return err
    except Exception:  # noqa: BLE001 -- an exception that cannot cross processes is re-raised by its text
        return RuntimeError(f"{type(err).__name__}: {err}\n{''.join(traceback.format_exception(err))}")


def run_rows(registry, rows, *, examples=25, seed=0, workers=1, database=None, replay_dir=R.DEFAULT_DIR,
             mutant=None, progress=True, stream=sys.stderr):
    """Fill each cell's verdict; prints one progress line per finished row when ``progress``.

    database: a spec for :func:`tokenlaw.fuzz.database.open_database` (opened in each process).
    """
    arguments.count(workers, "workers")
    campaign = Campaign(registry, examples, seed, database, replay_dir, mutant)
    tasks = [(ri, ci, row.operator, row.contract, cell.dtype, cell.backend)
             for ri, row in enumerate(rows) for ci, cell in enumerate(row.cells)]
    left = {ri: len(row.cells) for ri, row in enumerate(rows)}
    start, done = time.perf_counter(), 0
    # A display that predicts from per-cell cost (app.progress.Progress) is told what is planned and what
    # each finished cell cost, and reads the shared example count for its heartbeat.
    watch = progress and hasattr(stream, "cell_done")
    if watch:
        stream.planned([_cost_key(t) for t in tasks], workers)
        engine.example_counter = stream.counter = multiprocessing.get_context("fork").Value("q", 0)

    def finished(ri, ci, v):
        nonlocal done
        rows[ri].cells[ci].verdict = v
        done += 1
        left[ri] -= 1
        if watch:
            stream.cell_done(_cost_key(tasks_by_cell[ri, ci]), v.seconds)
        if progress and left[ri] == 0:
            _report_row(rows[ri], done, len(tasks), time.perf_counter() - start, stream)

    tasks_by_cell = {(t[0], t[1]): t for t in tasks}
    try:
        if workers == 1:
            for t in tasks:
                finished(*campaign.run(t))
        else:
            for result in _forked(campaign, tasks, workers):
                finished(*result)
    finally:
        if watch:
            engine.example_counter = None
    return rows


def _cost_key(task) -> tuple:
    """What a cell's cost is predicted from: its operator and contract (dtypes of a row cost alike)."""
    return task[2], task[3]


def _forked(campaign: Campaign, tasks, workers):
    """Results of ``tasks`` run by ``workers`` forked processes, as they finish.

    Forked, so each worker inherits the campaign object itself (a mutant's
    registry copy holds functions of modules that are in no ``sys.modules``
    and could not be pickled); only tasks and verdicts cross the pipes.
    """
    ctx = multiprocessing.get_context("fork")
    todo, results = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=campaign.serve, args=(todo, results), daemon=True) for _ in range(workers)]
    for t in tasks:
        todo.put(t)
    for _ in procs:
        todo.put(None)
    for proc in procs:
        proc.start()
    try:
        for _ in tasks:
            while True:
                try:
                    kind, value = results.get(timeout=1.0)
                    break
                except queue.Empty:
                    if not any(proc.is_alive() for proc in procs):
                        raise RuntimeError("every campaign worker process died before the run finished") from None
            if kind == "error":
                raise value
            yield value
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
            proc.join()


def rate(v) -> float:
    """Examples per second of one cell's verdict."""
    return v.examples / v.seconds if v and v.seconds > 0 else 0.0


def _report_row(row, done, total, elapsed, stream):
    cells = " ".join(f"{c.dtype}:{c.verdict.examples}ex/{rate(c.verdict):.0f}eps/r{_ratio(c.verdict)}"
                     for c in row.cells if c.verdict is not None)
    raised = next((c.verdict.detail.split(" [")[0] for c in row.cells
                   if c.verdict is not None and c.verdict.status == V.RAISED), "")
    stream.write(f"[{done:4d}/{total}] {elapsed:6.1f}s  {row.id:<42} {row.outcome:<30} {cells}"
                 + (f"  {raised}" if raised else "") + "\n")
    stream.flush()


def _ratio(v) -> str:
    r = v.ratio
    return "inf" if r == float("inf") else f"{r:.2g}"
