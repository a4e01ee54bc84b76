"""Run planned rows on the fuzz tier (eager PyTorch) and fill in their verdicts."""
from __future__ import annotations

import sys
import time

from tokenlaw.properties.case import DTYPES
from tokenlaw.properties.catalogue import CONTRACTS

from .engine import run_cell


def run_rows(registry, rows, *, examples=25, seed=0, progress=True, stream=sys.stderr):
    """Fill each cell's verdict; prints one progress line per row when ``progress``."""
    total = sum(len(r.cells) for r in rows)
    done, start = 0, time.perf_counter()
    for i, row in enumerate(rows, 1):
        op, contract = registry[row.operator], CONTRACTS[row.contract]
        for cell in row.cells:
            cell.verdict = run_cell(op, contract, DTYPES[cell.dtype], examples=examples, seed=seed,
                                    backend=cell.backend)
            done += 1
        if progress:
            elapsed = time.perf_counter() - start
            stream.write(f"[{done:4d}/{total}] {elapsed:6.1f}s  {row.id:<45} {row.outcome}\n")
            stream.flush()
    return rows
