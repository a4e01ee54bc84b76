"""Run one cell with Hypothesis: search for a violation, shrink it, store it for replay.

Claims and expected violations share one body: ``hypothesis.find`` searches
the operator's domain for an example the contract judges violated.  Finding
one (shrunk to a minimal example) reproduces an expected violation or
exposes an unexpected one, and is stored as a replay artifact
(:mod:`tokenlaw.fuzz.replay`) whose id the verdict carries; exhausting the
example budget means the law held on every example tried.  Either way the
verdict records how many examples ran and the largest discrepancy seen
relative to its bound.
"""
from __future__ import annotations

import random
import time

import torch
from hypothesis import HealthCheck, Phase, find, settings, target
from hypothesis.errors import NoSuchExample

from tokenlaw.properties.catalogue import Gap
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import dtype_name

from . import replay as R
from .regimes import applicable, visited
from .strategies import cases

# Examples per cell per dtype.  quick is the CI profile (the benchmark in
# docs/fuzz.md), deep is for long runs.
PROFILES = {"smoke": 10, "quick": 100, "default": 300, "deep": 2000}

# Per-contract bounds on the drawn domain, each for a stated reason:
# * gradcheck: two forward passes per input entry (small shapes), and finite
#   differences at eps = 1e-6 only approximate the Jacobian where the function
#   is smooth on that scale (no huge scores, no fully masked rows whose
#   softmax is 0/0, no near-null rows at the kink of |h|^2 / (tau + |h|^2));
# * formula_equivalence: the reference is the *unstabilised* formula, whose
#   exp(s) overflows float64 past s = 709: magnitudes stay where it is finite.
STRATEGY_BOUNDS = {
    "gradcheck": dict(n_max=3, batch_max=1, long_lengths=(), widths=(3, 4), scales=(1.0,), bias_scales=(1.0,),
                      mask_kinds=("random", "causal", "padding"), near_null=False, wide_params=False, offsets=False,
                      eps_draws=False),
    "null_gradient": dict(long_lengths=()),
    "formula_equivalence": dict(scales=(1.0,), bias_scales=(1.0,), offsets=False),
    # * softmax_reduction: the limit eps_den -> 0 is uniform only while eps_den << sum_j exp(s_ij);
    #   past s = -709 the exact OAttention output is ~0 while SDPA's is not.
    "softmax_reduction": dict(scales=(1.0, 4.0), bias_scales=(1.0, 4.0), offsets=False),
    # * differential: the bound is first-order in the unit roundoff; subnormal intermediates
    #   (near-null rows, presence tau drawn over 1e-4..1e3) lose precision no probe in another
    #   format sees, so they are left to the metamorphic contracts, which bound each side by its
    #   own measured error.  eps_den is still drawn down to 1e-8 (strategies.eps_dens): the
    #   stabilised denominator never forms 1 / eps_den, so a small eps_den must stay accurate.
    "differential": dict(near_null=False, wide_params=False),
    # * spec_reference: for the same reason no near-null rows: a presence whose |h|^2 is subnormal
    #   has a few significant bits, which 1 / sqrt(eps) in a standardisation amplifies far past any
    #   rounding bound; those rows are judged exactly by the null contracts.
    "spec_reference": dict(near_null=False),
}


def judge_safely(contract, case) -> V.Verdict:
    """The contract's verdict; an operator that crashes on a valid input violates the law."""
    try:
        return contract(case)
    except Exception as err:
        return V.violated(float("nan"), 0.0, f"raised {type(err).__name__}: {err}")


def run_cell(op, contract, dtype: torch.dtype, *, examples: int = 25, seed: int = 0, backend: str = "eager",
             database=None, replay_dir=R.DEFAULT_DIR, mutant: str | None = None) -> V.Verdict:
    """Judge ``contract`` for ``op`` in ``dtype`` on up to ``examples`` drawn cases.

    seed:       orders the search when no database is given (runs are then deterministic);
    database:   a Hypothesis ExampleDatabase (see :mod:`tokenlaw.fuzz.database`) or None;
    replay_dir: where a violation's artifact is written (None: not stored);
    mutant:     the name of the active mutant, recorded in the artifact.
    """
    reason = contract.skip(op, dtype_name(dtype), backend) if contract.skip else None
    if reason:
        status = V.NOT_RUNNABLE if isinstance(reason, Gap) else V.BY_DESIGN
        return V.Verdict(status, detail=reason, dtype=dtype_name(dtype))
    if backend != "eager":
        from tokenlaw.kernels.capabilities import not_runnable

        why = not_runnable(dtype)
        if why:
            return V.Verdict(V.NOT_RUNNABLE, detail=why, dtype=dtype_name(dtype), tier="kernel")
    start = time.perf_counter()
    seen = {"n": 0, "best": None, "set_aside": 0, "inconclusive": 0}
    wanted = applicable(op, contract.regimes, dtype)
    visits = dict.fromkeys(wanted, 0)

    def is_violation(case) -> bool:
        v = judge_safely(contract, case)
        seen["n"] += 1
        for name in visited(case, wanted):
            visits[name] += 1
        seen["set_aside"] += v.extra.get("set_aside_threshold", 0) + v.extra.get("set_aside_not_finite", 0)
        seen["inconclusive"] += bool(v.extra.get("inconclusive"))
        if not contract.exact and v.ratio < float("inf"):
            # steer the search toward the worst discrepancy relative to its bound
            target(min(v.ratio, 1e6), label="discrepancy / bound")
        if not v.violated and (seen["best"] is None or v.ratio > seen["best"].ratio):
            seen["best"] = v
        return v.violated

    phases = (Phase.generate, Phase.target, Phase.shrink)
    if database is not None:
        phases = (Phase.reuse,) + phases
    cfg = settings(max_examples=examples, deadline=None, database=database, derandomize=False,
                   suppress_health_check=list(HealthCheck), phases=phases)
    strategy = cases(op, dtype, backend=backend, **STRATEGY_BOUNDS.get(contract.name, {}))
    key = f"tokenlaw:{op.name}-{contract.name}-{backend}-{dtype_name(dtype)}".encode()
    try:
        # Hypothesis neither reads nor writes its database under an explicit seed, so a
        # run with a database is ordered by Hypothesis (and replays stored failures first).
        rnd = {} if database is not None else {"random": random.Random(seed)}
        found = find(strategy, is_violation, settings=cfg, database_key=key, **rnd)
    except NoSuchExample:
        best = seen["best"] or V.holds()
        detail, extra = _coverage(best.detail, dict(best.extra), visits, seen)
        return V.Verdict(V.HOLDS, best.discrepancy, best.bound, detail, examples=seen["n"],
                         seconds=time.perf_counter() - start, dtype=dtype_name(dtype), extra=extra)
    v = judge_safely(contract, found)
    v.detail, v.extra = _coverage(v.detail, dict(v.extra), visits, seen)
    v.counterexample = found.describe()
    v.examples = seen["n"]
    v.seconds = time.perf_counter() - start
    v.dtype = dtype_name(dtype)
    if replay_dir is not None and v.violated:
        v.replay = R.store(found, contract.name, v, replay_dir, mutant=mutant)
    return v



def _coverage(detail: str, extra: dict, visits: dict, seen: dict) -> tuple[str, dict]:
    """Add the regimes visited (examples per regime), the unvisited ones and the set-aside counts."""
    extra["regimes"] = dict(visits)
    extra["unvisited_regimes"] = [n for n, k in visits.items() if k == 0]
    extra["set_aside_rows"] = seen["set_aside"]
    extra["inconclusive_examples"] = seen["inconclusive"]
    notes = []
    if visits:
        notes.append("regimes " + ", ".join(f"{n} {k}" for n, k in visits.items()))
    if extra["unvisited_regimes"]:
        notes.append("NEVER visited: " + ", ".join(extra["unvisited_regimes"]))
    if seen["set_aside"]:
        notes.append(f"{seen['set_aside']} rows set aside over the run")
    if seen["inconclusive"]:
        notes.append(f"{seen['inconclusive']} examples inconclusive")
    return (detail + (" [" + "; ".join(notes) + "]" if notes else "")), extra
