"""Run planned rows on the fuzz tier: shards, a Dask cluster's workers, progress with examples/second.

A run is a list of rows (``tokenlaw.properties.plan``).  ``shard(rows,
i, n)`` keeps every n-th row, so n machines split a run and ``tokenlaw
report merge`` joins their reports; ``run_rows(..., workers=N)`` runs the
cells of one machine as Dask tasks on a LocalCluster of N processes, and
``run_rows(..., scheduler="tcp://HOST:8786")`` on a running Dask cluster
(:mod:`.cluster`); ``workers=1`` runs them here, in order.  Each worker gets
the run's :class:`CellRunner` (its registry, a mutant's copy included, shipped by
value).  Every cell is judged by :func:`tokenlaw.fuzz.engine.run_cell`, with
the same seed wherever it runs, so the report does not depend on where.
"""
from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import pickle
import sys
import time
import traceback

import cloudpickle

from tokenlaw.operators import arguments, path_probe
from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import contracts_of
from tokenlaw.process import interrupts
from tokenlaw.process.cpu_paths import one_thread

from . import engine
from . import replay as R
from .cluster import Pool
from .database import check_spec, open_database
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
class CellRunner:
    """What every cell of one run needs: the registry (the mutant's copy under ``tokenlaw mutate``) and the options.

    ``run_rows`` makes one per run; on a cluster it is pickled once and sent to
    every worker.  It pickles with cloudpickle, the modules named in
    ``by_value`` (a user's ``.py`` file) by value, so a worker that cannot
    import them (another machine, another folder) still runs their operators;
    a mutant's copy, whose modules are in no ``sys.modules``, travels by value
    anyway.  The database is opened lazily by the process that uses it (a
    Redis client must not cross processes).  Nothing of a run outlives it.
    """

    registry: object
    examples: int
    seed: int
    database: object = None
    replay_dir: object = None
    mutant: str | None = None
    by_value: tuple = ()
    patch: object = None          # a kernel mutant's patch(): a context manager active while a cell runs
    _db: object = dataclasses.field(default=None, repr=False)
    _patched: bool = dataclasses.field(default=False, repr=False)
    _paths: object = dataclasses.field(default=None, repr=False)

    def run(self, task, replay_dir=dataclasses.MISSING):
        """(row index, cell index, Verdict) of one planned cell; its replay goes to ``replay_dir`` if given."""
        r, c, op_name, contract, dtype, backend = task
        if self._db is None:
            self._db = open_database(self.database)
        with self.patched():
            v = run_cell(self.registry[op_name], contracts_of(self.registry)[contract], DTYPES[dtype],
                         examples=self.examples, seed=self.seed, backend=backend, database=self._db,
                         replay_dir=self.replay_dir if replay_dir is dataclasses.MISSING else replay_dir,
                         mutant=self.mutant)
        return r, c, v

    @contextlib.contextmanager
    def patched(self):
        """The mutant's ``patch()`` active in this process (entered once: nested calls find it active).

        A kernel mutant swaps a mutated kernel copy into the backend of the process that enters it, so
        it is entered where the cells run: around all of them here, around each one on a Dask worker
        (a worker of a running cluster outlives the run: it must not keep a mutated kernel).
        """
        if self.patch is None or self._patched:
            yield
            return
        with self.patch():
            self._patched = True
            try:
                yield
            finally:
                self._patched = False

    def cpu_paths(self) -> dict:
        """This process's CPU-path record (``operators.path_probe``), computed once per process."""
        if self._paths is None:
            self._paths = path_probe.record()
        return self._paths

    def __reduce__(self):
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")}
        return _unship, (shipped(fields, self.by_value),)


def shipped(obj, modules=()) -> bytes:
    """``obj`` pickled with cloudpickle, the loaded ``modules`` (names) by value."""
    added = [sys.modules[m] for m in modules
             if m in sys.modules and m not in cloudpickle.list_registry_pickle_by_value()]
    for module in added:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(obj)
    finally:
        for module in added:
            cloudpickle.unregister_pickle_by_value(module)


def _unship(data: bytes) -> CellRunner:
    return CellRunner(**cloudpickle.loads(data))


def run_rows(registry, rows, *, examples=25, seed=0, workers=1, scheduler=None, pool=None, database=None,
             replay_dir=R.DEFAULT_DIR, mutant=None, patch=None, by_value=(), progress=True, stream=sys.stderr):
    """Fill each cell's verdict; prints one progress line per finished row when ``progress``.

    workers:   1 runs the cells here, in order; N > 1 on a Dask LocalCluster of N worker processes;
    scheduler: the address of a running Dask scheduler (tcp://HOST:PORT) to run them on instead;
    pool:      an open :class:`~tokenlaw.fuzz.cluster.Pool` to run them on (several runs, one cluster);
               its :class:`~tokenlaw.fuzz.cluster.Execution` then records which workers ran them;
    database:  a spec for :func:`tokenlaw.fuzz.database.open_database` (opened in each process);
    patch:     a kernel mutant's ``patch()``, entered in whichever process runs a cell (:meth:`CellRunner.patched`);
    by_value:  names of loaded modules a worker receives by value (a user's ``.py`` operators file).
    The verdicts do not depend on ``workers``, ``scheduler`` or ``pool``: every cell runs with ``seed``.
    """
    arguments.count(workers, "workers")
    check_spec(database)              # a bad --database is exit 2 before any cell runs, wherever cells run
    runner = CellRunner(registry, examples, seed, database, replay_dir, mutant, tuple(by_value), patch)
    tasks = [(ri, ci, row.operator, row.contract, cell.dtype, cell.backend)
             for ri, row in enumerate(rows) for ci, cell in enumerate(row.cells)]
    left = {ri: len(row.cells) for ri, row in enumerate(rows)}
    start, done = time.perf_counter(), 0
    here = pool is None and runs_here(workers, scheduler, len(tasks))
    # A display that predicts from per-cell cost (app.progress.Progress) is told what is planned and what
    # each finished cell cost, and reads an example count for its heartbeat (shared memory here; the
    # workers' own counts, asked for, on a cluster).
    watch = progress and hasattr(stream, "cell_done")

    def finished(ri, ci, v):
        nonlocal done
        rows[ri].cells[ci].verdict = v
        done += 1
        left[ri] -= 1
        if watch:
            stream.cell_done(_cost_key(tasks_by_cell[ri, ci]), v.seconds)
        if progress and left[ri] == 0:
            _report_row(rows[ri], done, len(tasks), time.perf_counter() - start, stream)
        interrupts.checkpoint()         # a Ctrl-C the interpreter dropped while the cell ran stops here (issue 47)

    tasks_by_cell = {(t[0], t[1]): t for t in tasks}
    if here:
        if watch:
            stream.planned([_cost_key(t) for t in tasks], 1)
            engine.example_counter = stream.counter = multiprocessing.Value("q", 0)
        try:
            with one_thread(), runner.patched():
                for t in tasks:
                    finished(*runner.run(t))
        finally:
            if watch:
                engine.example_counter = None
        return rows
    if pool is None:
        with Pool(workers, scheduler) as opened:
            if progress:
                stream.write(opened.describe() + "\n")
            return run_rows(registry, rows, examples=examples, seed=seed, pool=opened, database=database,
                            replay_dir=replay_dir, mutant=mutant, patch=patch, by_value=by_value,
                            progress=progress, stream=stream)
    if watch:
        stream.planned([_cost_key(t) for t in tasks], pool.size())
        stream.counter = _Judged(pool)
    # each worker writes its replays into a temporary folder of its own; the pool writes them under replay_dir
    for result in pool.run(runner, tasks, replay_dir=replay_dir):
        finished(*result)
    return rows


# Below this many cells a check on the default --workers runs in this process: a LocalCluster's start-up
# (~5 s on 2 cores) is more than the cells' own time there (app.argtypes.DefaultWorkers).
SMALL_RUN = 16


def runs_here(workers: int, scheduler: str | None, cells: int) -> bool:
    """Whether ``cells`` run in this process: no scheduler named and one worker, or one cell, to run them
    (a cluster would only add its start-up), or fewer than :data:`SMALL_RUN` cells on the default workers
    (``workers.auto``: a count nobody typed)."""
    return scheduler is None and (min(workers, cells) <= 1 or (getattr(workers, "auto", False) and cells < SMALL_RUN))


def picklable(err: BaseException) -> BaseException:
    """``err`` if it pickles, else a RuntimeError carrying its text and traceback (to cross a process boundary)."""
    try:
        pickle.dumps(err)
        return err
    except Exception:  # noqa: BLE001 -- an exception that cannot cross processes is re-raised by its text
        return RuntimeError(f"{type(err).__name__}: {err}\n{''.join(traceback.format_exception(err))}")


class _Judged:
    """The heartbeat's example count on a cluster: the examples the workers judged since the run began."""

    def __init__(self, pool):
        self.pool, self.base = pool, pool.judged()

    @property
    def value(self) -> int:
        return max(0, self.pool.judged() - self.base)


def _cost_key(task) -> tuple:
    """What a cell's cost is predicted from: its operator and contract (dtypes of a row cost alike)."""
    return task[2], task[3]


def rate(v) -> float:
    """Examples per second of one cell's verdict."""
    return v.examples / v.seconds if v and v.seconds > 0 else 0.0


def _report_row(row, done, total, elapsed, stream):
    cells = " ".join(f"{c.dtype}:{c.verdict.examples}ex/{rate(c.verdict):.0f}eps/r{_ratio(c.verdict)}"
                     for c in row.cells if c.verdict is not None)
    raised = next((c.verdict.detail for c in row.cells
                   if c.verdict is not None and c.verdict.status == V.Status.RAISED), "")
    stream.write(f"[{done:4d}/{total}] {elapsed:6.1f}s  {row.id:<42} {row.outcome:<30} {cells}"
                 + (f"  {raised}" if raised else "") + "\n")
    stream.flush()


def _ratio(v) -> str:
    r = v.ratio
    return "inf" if r == float("inf") else f"{r:.2g}"
