"""Cells on a Dask cluster: an in-process ``LocalCluster`` of N worker processes, or a running scheduler.

:class:`Pool` opens one (``Pool(workers=2)`` or ``Pool(scheduler="tcp://host:8786")``) and runs a
run's cells there as Dask tasks, yielding each result as it finishes (so a progress line moves
with them).  Dask brings what a hand-written pool did not: work stealing, a dead worker's cells
re-run on the others, workers on other machines (``dask worker tcp://HOST:8786``).

What crosses to a worker is the :class:`~tokenlaw.fuzz.rows.CellRunner` (a task of its own,
replicated to every worker; it pickles its registry by value where a worker could not import it: a mutant's copy, a
user's ``.py`` module) and, per cell, a small tuple.  What comes back is the verdict, the replay
artifacts the cell stored (a worker on another machine writes them into a temporary folder; the
parent writes them where the run keeps its replays, byte for byte), the worker's address and its
CPU-path record: a worker whose float paths differ from this process's would judge other bits, so
the run stops and says which (``process/cpu_paths.py``).

>>> with Pool(workers=2) as pool:                                   # doctest: +SKIP
...     for r, c, verdict in pool.run(runner, tasks): ...
"""
from __future__ import annotations

import dataclasses
import logging
import os
import sys
import tempfile
import threading
import time
import uuid
import warnings
from pathlib import Path

import torch
from hypothesis.errors import HypothesisDeprecationWarning

from tokenlaw.operators import arguments, path_probe
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.process import interrupts
from tokenlaw.process.files import atomic_write

from . import engine


@dataclasses.dataclass
class Execution:
    """How a run's cells were executed (not what they found): filled in by :class:`Pool`."""

    scheduler: str | None = None                   # the scheduler's address (a LocalCluster's own too)
    dashboard: str | None = None                   # Dask's dashboard link, when it serves one
    workers: dict = dataclasses.field(default_factory=dict)   # worker address -> cells it finished


class Counter:
    """A per-process count of judged examples with the ``get_lock()`` / ``value`` of a multiprocessing.Value
    (what ``engine.example_counter`` expects), for a Dask worker process."""

    def __init__(self):
        self._lock, self.value = threading.Lock(), 0

    def get_lock(self):
        return self._lock


def _judged_here() -> int:
    """Examples judged so far by this worker process (run on every worker by :meth:`Pool.judged`)."""
    counter = engine.example_counter
    return counter.value if counter is not None else 0


def run_cell_task(runner, task):
    """A Dask task: one cell on this worker -> (row, cell, verdict, replay files, worker address, CPU paths)."""
    from distributed import get_worker  # optional: distributed is imported only where cells run on Dask

    torch.set_num_threads(1)            # the worker processes are the parallelism
    # Hypothesis compares the global `random` state around each draw and warns "Do not use the random
    # module inside strategies" when it moved; on a worker the event-loop thread moves it (Dask's own
    # jitter), not the strategies (they use none: a forked or in-process run never warns)
    warnings.filterwarnings("ignore", message="Do not use the `random` module inside strategies",
                            category=HypothesisDeprecationWarning)
    if engine.example_counter is None:
        engine.example_counter = Counter()
    with tempfile.TemporaryDirectory(prefix="tokenlaw-replays-") as tmp:
        r, c, v = runner.run(task, replay_dir=Path(tmp) if runner.replay_dir is not None else None)
        files = {p.name: p.read_text() for p in sorted(Path(tmp).iterdir()) if p.is_file()}
    return r, c, v, files, get_worker().address, runner.cpu_paths(), os.environ.get(TRIM)


# glibc's trim threshold, which Dask's nanny sets for the workers it starts (see Pool.__enter__)
TRIM = "MALLOC_TRIM_THRESHOLD_"
# what a remote `dask worker` needs in its environment to start its worker processes without it
UNTRIMMED = "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON=\"{'MALLOC_TRIM_THRESHOLD_': None}\""


def _hold(runner):
    """A Dask task whose result is the cell runner itself (unpickled once on the worker that runs it)."""
    return runner


def _check_scheduler(address: str) -> str:
    if not isinstance(address, str) or "://" not in address:
        raise InvalidArgument(f"--scheduler: expected a Dask scheduler address such as tcp://HOST:8786, "
                              f"got {address!r}")
    return address


class Pool:
    """A Dask client on a LocalCluster of ``workers`` processes (``scheduler=None``) or on ``scheduler``."""

    def __init__(self, workers: int = 2, scheduler: str | None = None, *, timeout: float = 30.0,
                 threads: bool = False):
        self.workers = arguments.count(workers, "workers")
        self.address = None if scheduler is None else _check_scheduler(scheduler)
        # threads: a LocalCluster's workers are threads of this process, for tasks that fork a process of their
        # own per item (the symbolic tier's rows): no worker process imports torch and tokenlaw again or probes
        # its CPU paths (this process's own), about 3 s of CPU per worker; a --scheduler's workers are processes
        self.threaded = threads and self.address is None
        self.timeout = timeout
        self.cluster = self.client = None
        self.execution = Execution()
        self._paths = None

    def __enter__(self) -> "Pool":
        import dask  # optional: as distributed below
        from distributed import Client, LocalCluster  # optional: 0.3 s to import; --workers 1 never needs it
        # a worker's statistical profiler samples the running cell's stack every 10 ms under the GIL (one
        # cell measured 15 % slower with it, 4 % without) and reports nothing tokenlaw reads.
        # Dask's nanny starts every worker with MALLOC_TRIM_THRESHOLD_=65536 (distributed.nanny.pre-spawn-environ);
        # glibc then hands freed memory back at once and stops raising its mmap threshold, so each large
        # tensor is a fresh mmap whose pages fault in again: measured on one cell (sdpa
        # permutation_equivariance float32, 100 examples) 12.8 s against 4.6 s, 4.8 million minor page
        # faults against 0.14 million (docs/fuzz.md, "Cells on Dask").  The workers keep glibc's default.
        # The event loops' periodic chores (a latency tick every 20 ms, memory checks every 100 ms, system
        # statistics every 500 ms) took 1.6 s of CPU per 30 s from an idle 2-worker cluster, 0.36 s at the
        # intervals below; each also takes the GIL from a running cell.  tokenlaw reads none of them.
        dask.config.set({"distributed.worker.profile.enabled": False,
                         "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                         "distributed.admin.tick.interval": "1s",
                         "distributed.worker.memory.monitor-interval": "1s",
                         "distributed.admin.system-monitor.interval": "5s"})
        if self.address is None:
            # processes (one thread each): the cells hold the GIL; the workers inherit this process's
            # environment, the pinned CPU paths (MKL_CBWR, ATEN_CPU_CAPABILITY) among them, and (started
            # with SIGINT blocked) never see a terminal's Ctrl-C: this process alone stops, and closes them
            # (issue 47: each worker printed its own KeyboardInterrupt traceback)
            with interrupts.children_ignore():
                self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=not self.threaded,
                                            dashboard_address=":0", silence_logs=logging.ERROR)
                self.client = Client(self.cluster, set_as_default=False)
        else:
            try:
                self.client = Client(self.address, timeout=self.timeout, set_as_default=False)
            except (OSError, TimeoutError) as err:
                raise InvalidArgument(f"--scheduler: cannot reach a Dask scheduler at {self.address} ({err})") \
                    from None
        self.execution.scheduler = self.client.scheduler.address
        self.execution.dashboard = _dashboard(self.client)
        return self

    def __exit__(self, *exc):
        # a Ctrl-C while the cluster closes would leave it half closed: it is held, then raised once closed
        with interrupts.held() as caught:
            if self.client is not None:
                self.client.close()
            if self.cluster is not None:
                self.cluster.close()
            self.client = self.cluster = None
        if caught.value and not (exc and exc[0] is not None and issubclass(exc[0], KeyboardInterrupt)):
            raise KeyboardInterrupt

    def size(self) -> int:
        """How many workers the cluster has now."""
        return max(1, len(self.client.scheduler_info(n_workers=-1).get("workers", {})))

    def describe(self) -> str:
        """'dask: 2 workers, scheduler tcp://..., dashboard http://...' for the user's stderr."""
        n = self.size()
        dash = (f", dashboard {self.execution.dashboard}" if self.execution.dashboard
                else ", no dashboard (Dask serves one where bokeh is installed)")
        return f"dask: {n} worker{'' if n == 1 else 's'}, scheduler {self.execution.scheduler}{dash}"

    def judged(self) -> int:
        """Examples judged so far by every worker process (for a progress heartbeat; 0 if a worker is away)."""
        try:
            return sum(self.client.run(_judged_here, wait=True, on_error="ignore").values())
        except Exception:  # noqa: BLE001 -- a heartbeat never stops a run: a worker may be leaving
            return 0

    def each(self, job, items, *, name: str = "job"):
        """``job.run(item)`` of each of ``items``, as they finish, run by the cluster's workers.

        ``job`` is a task of its own, replicated to every worker once (as a cell runner is, :meth:`run`); a worker
        whose CPU-path record differs from this process's stops the run, as in :meth:`run` (a worker thread runs
        this process's own code: nothing to compare)."""
        from distributed import as_completed  # optional: see __enter__
        if self._paths is None and not self.threaded:
            self._paths = path_probe.record()
        run_id = uuid.uuid4().hex[:8]
        shared = self.client.submit(_hold, job, key=f"tokenlaw-{name}-{run_id}", pure=False)
        self.client.replicate([shared])
        futures = [self.client.submit(run_job_task, shared, item, not self.threaded, key=f"tokenlaw-{name}-{run_id}-{k}",
                                      pure=False, priority=-k)
                   for k, item in enumerate(items)]
        try:
            for future in as_completed(futures, loop=self.client.loop):
                result, worker, paths = future.result()
                if not self.threaded:
                    self._same_paths(worker, paths)
                self.execution.workers[worker] = self.execution.workers.get(worker, 0) + 1
                yield result
        finally:
            self.client.cancel(futures + [shared], force=True)

    def _same_paths(self, worker: str, paths) -> None:
        if paths != self._paths:
            flag = "--workers" if self.address is None else "--scheduler"
            raise InvalidArgument(f"{flag}: the Dask worker {worker} runs other CPU code paths than this process "
                                  f"({paths} vs {self._paths}): its verdicts would differ; start it with "
                                  "the same tokenlaw and TOKENLAW_CPU_PATHS setting")

    def run(self, runner, tasks, *, replay_dir=None, until=None):
        """(row, cell, verdict) of each of ``tasks``, as they finish, run by the cluster's workers.

        At ``until`` (a ``time.monotonic()`` instant) the cells still running are cancelled and the
        iteration ends.  Replays the cells stored are written under ``replay_dir``; a worker whose CPU-path record
        differs from this process's stops the run (InvalidArgument naming the worker and both records).
        """
        from distributed import as_completed  # optional: see __enter__
        if self._paths is None:
            self._paths = path_probe.record()
        run_id = uuid.uuid4().hex[:8]
        # the runner is a task of its own, not scattered data: when a worker dies, the scheduler can
        # compute it again for the cells that still need it (scattered data it could only lose)
        shared = self.client.submit(_hold, runner, key=f"tokenlaw-cells-{run_id}", pure=False)
        self.client.replicate([shared])          # every worker gets its copy once, before the cells
        futures = [self.client.submit(run_cell_task, shared, t, key=f"tokenlaw-cell-{run_id}-{t[0]}-{t[1]}",
                                      pure=False, priority=-k)
                   for k, t in enumerate(tasks)]
        try:
            timeout = None if until is None else max(0.0, until - time.monotonic())
            for future in _until_timeout(as_completed(futures, loop=self.client.loop, timeout=timeout)):
                r, c, v, files, worker, paths, trim = future.result()
                self._same_paths(worker, paths)
                if trim is not None and worker not in self.execution.workers:
                    warn(f"tokenlaw: the Dask worker {worker} runs with {TRIM}={trim} (the nanny's default): "
                         "cells that allocate large tensors run up to 2.7x slower there (the same verdicts); "
                         f"start `dask worker` with {UNTRIMMED} in its environment\n")
                if replay_dir is not None:
                    for name, data in files.items():
                        atomic_write(Path(replay_dir) / name, data)
                self.execution.workers[worker] = self.execution.workers.get(worker, 0) + 1
                yield r, c, v
        finally:
            self.client.cancel(futures + [shared], force=True)


def run_job_task(job, item, process: bool):
    """A Dask task: ``job.run(item)`` on this worker -> (its result, worker address, its CPU paths).

    ``process``: the worker is a process of its own (its CPU paths are recorded, and its torch runs one thread);
    a worker thread of the calling process (``Pool(threads=True)``) changes nothing of that process's state."""
    from distributed import get_worker  # optional: as run_cell_task

    global _worker_paths
    if not process:
        return job.run(item), get_worker().address, None
    torch.set_num_threads(1)            # the worker processes are the parallelism
    if _worker_paths is None:
        _worker_paths = path_probe.record()
    return job.run(item), get_worker().address, _worker_paths


_worker_paths = None        # this worker process's CPU-path record, computed by its first job task


def warn(text: str) -> None:
    """A line for the user's stderr (a cluster's advice; never part of a report)."""
    sys.stderr.write(text)
    sys.stderr.flush()


def _until_timeout(results):
    """The results of an ``as_completed`` iterator until its timeout (then: no more)."""
    try:
        yield from results
    except TimeoutError:
        return


def _dashboard(client) -> str | None:
    """The dashboard's link, or None when Dask serves none (bokeh is not installed)."""
    try:
        info = client.scheduler_info(n_workers=0)
        port = (info.get("services") or {}).get("dashboard")
    except Exception:  # noqa: BLE001 -- the link is a courtesy
        return None
    if not port:
        return None
    return client.dashboard_link
