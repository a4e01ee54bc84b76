"""Run one cell with Hypothesis: search for a violation, shrink it, or report the law held.

Claims and expected violations share one body: ``hypothesis.find`` searches
the operator's domain for an example the contract judges violated.  Finding
one (shrunk to a minimal example) reproduces an expected violation or
exposes an unexpected one; exhausting the example budget means the law held
on every example tried.
"""
from __future__ import annotations

import random
import time

import torch
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample

from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import dtype_name

from .strategies import cases

PROFILES = {"smoke": 10, "quick": 25, "default": 100, "deep": 1000}


def _judge_safely(contract, case) -> V.Verdict:
    try:
        return contract(case)
    except Exception as err:   # an operator that crashes on a valid input violates the law
        return V.violated(float("nan"), 0.0, f"raised {type(err).__name__}: {err}")


def run_cell(op, contract, dtype: torch.dtype, *, examples: int = 25, seed: int = 0,
             backend: str = "eager") -> V.Verdict:
    """Judge ``contract`` for ``op`` in ``dtype`` on up to ``examples`` drawn cases run on ``backend``."""
    start = time.perf_counter()
    if backend != "eager":
        from tokenlaw.kernels.capabilities import not_runnable

        why = not_runnable(dtype)
        if why:
            return V.Verdict(V.NOT_RUNNABLE, detail=why, dtype=dtype_name(dtype), tier="kernel")
    seen = {"n": 0, "best": None}

    def is_violation(case) -> bool:
        v = _judge_safely(contract, case)
        seen["n"] += 1
        if not v.violated and (seen["best"] is None or v.ratio > seen["best"].ratio):
            seen["best"] = v
        return v.violated

    cfg = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                   suppress_health_check=list(HealthCheck),
                   phases=(Phase.generate, Phase.shrink))
    strategy = cases(op, dtype, backend=backend)
    try:
        found = find(strategy, is_violation, settings=cfg, random=random.Random(seed))
    except NoSuchExample:
        best = seen["best"] or V.holds()
        return V.Verdict(V.HOLDS, best.discrepancy, best.bound, best.detail, examples=seen["n"],
                         seconds=time.perf_counter() - start, dtype=dtype_name(dtype), extra=best.extra)
    v = _judge_safely(contract, found)
    v.counterexample = found.describe()
    v.examples = seen["n"]
    v.seconds = time.perf_counter() - start
    v.dtype = dtype_name(dtype)
    return v
