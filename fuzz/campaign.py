"""Run planned rows on the fuzz tier: shards, worker processes, progress with examples/second.

A campaign is a list of rows (``tokenlaw.properties.plan``).  ``shard(rows,
i, n)`` keeps every n-th row, so n machines split a campaign and ``tokenlaw
report merge`` joins their reports; ``run_rows(..., workers=N)`` spreads the
cells of one machine over N processes (forked, so they inherit the registry
and any active mutant).  Every cell is judged by
:func:`tokenlaw.fuzz.engine.run_cell`.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import sys
import time

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties.case import DTYPES
from tokenlaw.properties.catalogue import CONTRACTS

from . import replay as R
from .database import open_database
from .engine import run_cell

_STATE: dict = {}     # what forked workers inherit: the registry and the run options


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


def _run_one(task):
    r, c, op_name, contract, dtype, backend = task
    opts = _STATE["opts"]
    if "db" not in _STATE:            # opened once per process (a Redis client must not cross a fork)
        _STATE["db"] = open_database(opts["database"])
    v = run_cell(_STATE["registry"][op_name], CONTRACTS[contract], DTYPES[dtype], examples=opts["examples"],
                 seed=opts["seed"], backend=backend, database=_STATE["db"], replay_dir=opts["replay_dir"],
                 mutant=opts["mutant"])
    return r, c, v


def _init_worker():
    import torch

    torch.set_num_threads(1)          # the processes are the parallelism
    _STATE.pop("db", None)


def run_rows(registry, rows, *, examples=25, seed=0, workers=1, database=None, replay_dir=R.DEFAULT_DIR,
             mutant=None, progress=True, stream=sys.stderr):
    """Fill each cell's verdict; prints one progress line per finished row when ``progress``.

    database: a spec for :func:`tokenlaw.fuzz.database.open_database` (opened in each process).
    """
    if not isinstance(workers, int) or workers < 1:
        raise InvalidArgument(f"workers: expected an int >= 1, got {workers!r}")
    _STATE.clear()
    _STATE.update(registry=registry, opts=dict(examples=examples, seed=seed, database=database,
                                               replay_dir=replay_dir, mutant=mutant))
    tasks = [(ri, ci, row.operator, row.contract, cell.dtype, cell.backend)
             for ri, row in enumerate(rows) for ci, cell in enumerate(row.cells)]
    left = {ri: len(row.cells) for ri, row in enumerate(rows)}
    start, done = time.perf_counter(), 0

    def finished(ri, ci, v):
        nonlocal done
        rows[ri].cells[ci].verdict = v
        done += 1
        left[ri] -= 1
        if progress and left[ri] == 0:
            _report_row(rows[ri], done, len(tasks), time.perf_counter() - start, stream)

    if workers == 1:
        _init_worker_inline()
        for t in tasks:
            finished(*_run_one(t))
    else:
        ctx = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker) as pool:
            for fut in cf.as_completed([pool.submit(_run_one, t) for t in tasks]):
                finished(*fut.result())
    return rows


def _init_worker_inline():
    _STATE.pop("db", None)


def rate(v) -> float:
    """Examples per second of one cell's verdict."""
    return v.examples / v.seconds if v and v.seconds > 0 else 0.0


def _report_row(row, done, total, elapsed, stream):
    cells = " ".join(f"{c.dtype}:{c.verdict.examples}ex/{rate(c.verdict):.0f}eps/r{_ratio(c.verdict)}"
                     for c in row.cells if c.verdict is not None)
    stream.write(f"[{done:4d}/{total}] {elapsed:6.1f}s  {row.id:<42} {row.outcome:<30} {cells}\n")
    stream.flush()


def _ratio(v) -> str:
    r = v.ratio
    return "inf" if r == float("inf") else f"{r:.2g}"
