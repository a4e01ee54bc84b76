"""Mutation testing: run the suite against each seeded bug and name the contracts that kill it.

For every mutant the declared rows of its operators are planned and run
on the registry copy the mutant returns (``mutant.apply``, inside ``mutant.patch()``); the mutant is killed when at least one
row no longer matches its declaration (a claimed law violated, or an
expected violation no longer reproduced).  The same rows are first run
unmutated: a row that already fails there cannot count as a kill.
"""
from __future__ import annotations

import sys
import time

from tokenlaw.properties.mutants import MutantResult
from tokenlaw.properties.plan import plan

from ..rows import run_rows


def baseline_failures(registry, operators, backend, *, examples, seed, workers) -> set:
    """Row ids that fail without any mutant (they cannot count as kills)."""
    rows = plan(registry, operators=sorted(operators), backend=backend)
    run_rows(registry, rows, examples=examples, seed=seed, workers=workers, replay_dir=None, progress=False)
    return {r.id for r in rows if r.failing}


def run_mutant(registry, mutant, *, examples=30, seed=0, workers=1, replay_dir=None, baseline=frozenset()):
    start = time.perf_counter()
    bad = mutant.apply(registry)             # a copy: the registry passed in is never changed
    rows = plan(bad, operators=list(mutant.operators), backend=mutant.backend)
    # the patch is entered where the cells run: here, or on each Dask worker (it swaps that process's kernel)
    run_rows(bad, rows, examples=examples, seed=seed, workers=workers, replay_dir=replay_dir,
             mutant=mutant.name, patch=mutant.patch, progress=False)
    killers = [r.id for r in rows if r.failing and r.id not in baseline]
    replays = {}
    for r in rows:
        if r.id in killers:
            ids = [c.verdict.replay for c in r.cells if c.verdict is not None and c.verdict.replay]
            if ids:
                replays[r.id] = ids[0]
    return MutantResult(mutant.name, mutant.backend, mutant.description, tuple(mutant.operators), killers,
                        replays, len(rows), time.perf_counter() - start)


def run_mutants(registry, mutants, *, examples=30, seed=0, workers=1, replay_dir=None, stream=sys.stderr):
    ops = {o for m in mutants for o in m.operators}
    backends = {m.backend for m in mutants}
    baseline = set()
    for b in backends:
        baseline |= baseline_failures(registry, {o for m in mutants if m.backend == b for o in m.operators}, b,
                                      examples=examples, seed=seed, workers=workers)
    if stream:
        stream.write(f"baseline: {len(ops)} operators, {len(baseline)} rows already failing unmutated\n")
    results = []
    for m in mutants:
        res = run_mutant(registry, m, examples=examples, seed=seed, workers=workers, replay_dir=replay_dir,
                         baseline=baseline)
        results.append(res)
        if stream:
            verdict = f"KILLED by {', '.join(res.killers)}" if res.killed else "SURVIVED"
            stream.write(f"  {m.name:<36} {res.seconds:5.1f}s  {verdict}\n")
            stream.flush()
    return results, baseline
