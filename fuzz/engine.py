"""Run one cell with Hypothesis: search for a violation, shrink it, store it for replay.

Claims and expected violations share one body: ``hypothesis.find`` searches
the operator's domain for an example the contract judges violated.  Finding
one (shrunk to a minimal example) reproduces an expected violation or
exposes an unexpected one, and is stored as a replay artifact
(:mod:`tokenlaw.fuzz.replay`) whose id the verdict carries; exhausting the
example budget means the law held on every example tried -- provided
enough of them were judged (:func:`min_judged`): a cell whose examples were
nearly all inconclusive (every row set aside, outside the error model) is
``vacuous``, never ``holds``.  Either way the verdict records how many
examples ran, how many were judged and the largest discrepancy seen
relative to its bound.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import random
import sys
import time
from unittest import mock

import hypothesis
import hypothesis.reporting
import torch
from hypothesis import HealthCheck, Phase, event, find, settings, target
from hypothesis.control import current_build_context
from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes
from hypothesis.errors import NoSuchExample

try:        # optional: Hypothesis internals (the pool of mined constants; see pinned_constants)
    from hypothesis.internal.conjecture import providers as _providers
except ImportError:
    _providers = None

from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.contract import Gap
from tokenlaw.operators.dtypes import name as dtype_name
from tokenlaw.properties.profiles import ALIASES, DEFAULT_PROFILE, PROFILES, Profiles, profile_name  # noqa: F401 (re-exported)

from . import replay as R
from .regimes import applicable, first_param, visited
from .strategies import cases

# A cell is evidence only if enough of its examples were *judged* (not inconclusive: every row set
# aside, or the example outside the error model).  With k judged examples and no violation, the rate
# of inputs that would violate the law is below 3/k at 95% confidence (the rule of three); a
# profile's budget N promises 3/N.  A cell whose k is under a tenth of the examples it ran (at most
# N) has a bound more than ten times weaker than its profile promises: it is ``vacuous``, not
# ``holds`` (never green, as in the symbolic tier).  Per profile: smoke 1, ci 10, thorough 30,
# deep 200 (``MIN_JUDGED``).
JUDGED_FRACTION = 10


def min_judged(examples: int) -> int:
    """The fewest judged examples a cell that ran ``examples`` examples needs: a tenth, at least 1.

    >>> min_judged(100), min_judged(10), min_judged(1), min_judged(65)
    (10, 1, 1, 7)
    """
    return max(1, -(-examples // JUDGED_FRACTION))


MIN_JUDGED = Profiles({name: min_judged(n) for name, n in PROFILES.items()})

# Examples judged so far by this process (and, when a campaign shares one across its forked workers, by
# all of them): anything with a ``value`` attribute (a ``multiprocessing.Value``); read by a progress
# display's heartbeat during a long row.  None: not counted.
example_counter = None


def _count_example() -> None:
    counter = example_counter
    if counter is not None:
        with counter.get_lock():
            counter.value += 1

# Per-contract bounds on the drawn domain are declared with each contract, with their reasons
# (``@contract(fuzz=...)``: e.g. gradcheck's small smooth shapes, the unstabilised reference's
# finite magnitudes for formula_equivalence): ``contract.fuzz_bounds``.


def _pin_hooks():
    """(the constants cache, the pool type) when this Hypothesis has what pinning needs, else None."""
    cache = getattr(getattr(_providers, "CONSTANTS_CACHE", None), "cache", None)
    pool = getattr(_providers, "Constants", None)
    if getattr(_providers, "_get_local_constants", None) is None or cache is None or pool is None:
        return None
    return cache, pool


def draws() -> str:
    """What a seed's draws depend on, for the report's meta: the Hypothesis version and whether mined
    constants are pinned out (then the same seed and budget draw the same inputs whatever the source)."""
    pinned = "local constants pinned out" if _pin_hooks() else "local constants mixed in"
    return f"hypothesis {hypothesis.__version__}, {pinned}"


@contextlib.contextmanager
def pinned_constants():
    """Hypothesis draws no constant mined from local source while active; yields whether that took.

    Hypothesis (6.155 measured) draws about 5% of its numbers from a pool of
    literal constants it mines from every loaded *local* module (outside
    site-packages, tests excluded).  In a checkout that pool is tokenlaw's own
    source plus the user's: an edit to any literal, or one more module
    imported, changes what the same seed draws, and the gate, which compares
    two runs of the same seed as runs on the same inputs, would compare
    different inputs.  Pinning the pool to empty (Hypothesis's built-in
    constants stay) makes a seed draw the same inputs whatever the source
    around it.  It reaches into Hypothesis's internals; where they are absent
    (another version) nothing is patched, and :func:`draws` (the report's
    meta) says so from the same check.
    """
    hooks = _pin_hooks()
    if hooks is None:
        yield False
        return
    cache, pool = hooks
    empty = pool()
    cache.clear()                       # it holds each (type, bounds)'s local constants as computed
    try:
        with mock.patch.object(_providers, "_get_local_constants", lambda: empty):
            yield True
    finally:
        cache.clear()


def _to_stderr(text) -> None:
    """Hypothesis' own messages (an interrupted search's "@seed(...)" hint among them) go to stderr: stdout
    carries the command's results (``--json`` among them), never a library's notes."""
    print(text, file=sys.stderr)


def run_cell(op, contract, dtype: torch.dtype, *, examples: int = 25, seed: int = 0, backend: str = backends.EAGER.name,
             database=None, replay_dir=R.DEFAULT_DIR, mutant: str | None = None) -> V.Verdict:
    """Judge ``contract`` for ``op`` in ``dtype`` on up to ``examples`` drawn cases.

    seed:       orders the search (the same seed and database contents: the same verdict);
    database:   a Hypothesis ExampleDatabase (see :mod:`tokenlaw.fuzz.database`) or None: its stored
                counterexamples of this cell are replayed first, as stored (:func:`_replay_stored`); if
                none still fails, the seeded search runs and a violation it finds is stored there, shrunk;
    replay_dir: where a violation's artifact is written (None: not stored);
    mutant:     the name of the active mutant, recorded in the artifact.
    """
    impl = backends.get(backend)
    reason = contract.skip(op, dtype_name(dtype), impl) if contract.skip else None
    if reason:
        status = V.NOT_RUNNABLE if isinstance(reason, Gap) else V.Status.NOT_APPLICABLE_BY_DESIGN
        return V.Verdict(status, detail=reason, dtype=dtype_name(dtype))
    why = impl.not_runnable(dtype_name(dtype))
    if why:
        return V.Verdict(V.NOT_RUNNABLE, detail=why, dtype=dtype_name(dtype),
                         tier="fuzz" if impl.reference else "kernel")
    start = time.perf_counter()
    seen = {"n": 0, "best": None, "set_aside": 0, "inconclusive": 0, "threshold": 0, "not_finite": 0,
            "not_runnable": 0, "why": None, "worst": None}
    # every example the search ran, in order: two runs drew the same inputs iff these digests agree (the
    # search is steered by discrepancy / bound, so another CPU's rounding can send it elsewhere)
    ran = hashlib.sha256()
    searched = {}          # shape axis -> [min, max] of the drawn values
    limit = op.domain.limit(dtype_name(dtype))
    wanted = applicable(op, contract.regimes, dtype)
    visits = dict.fromkeys(wanted, 0)
    # rows a contract set aside (properties.differential_laws.set_aside), per regime: [set aside (a
    # non-finite oracle or a threshold), rows, set aside for a non-finite oracle].  A regime whose every row
    # had no finite oracle judged nothing (a reference written naively as exp(s) / sum exp(s) is NaN exactly
    # at large scores): the cell is vacuous.  Rows set aside at a declared threshold are counted but do not
    # decide it (bfloat16 puts every large-score row of pn_fir_c within its roundoff of the threshold, where
    # no rounding bound exists for any oracle: reported in extra.set_aside_by_regime).
    aside = {name: [0, 0, 0] for name in wanted}

    def is_violation(case) -> bool:
        _widen(searched, case)
        drawn = json.dumps(case.fields(), sort_keys=True, default=repr).encode()
        ran.update(drawn + b"\n")
        v = contract.judge(case)
        seen["n"] += 1
        _count_example()
        rows = v.extra.get("rows", 0)
        dropped = v.extra.get("set_aside_threshold", 0) + v.extra.get("set_aside_not_finite", 0)
        for name in visited(case, wanted):
            visits[name] += 1
            event("regime", name)          # a fuzzer's coverage (and Hypothesis' statistics) count regimes too
            if rows:
                aside[name][0] += dropped
                aside[name][1] += rows
                aside[name][2] += v.extra.get("set_aside_not_finite", 0)
        seen["threshold"] += v.extra.get("set_aside_threshold", 0)
        seen["not_finite"] += v.extra.get("set_aside_not_finite", 0)
        seen["set_aside"] = seen["threshold"] + seen["not_finite"]
        if v.inconclusive or v.status == V.NOT_RUNNABLE:
            # judged nothing: every row set aside, outside the error model, or unanswerable here
            seen["inconclusive"] += 1
            seen["not_runnable"] += v.status == V.NOT_RUNNABLE
            seen["why"] = seen["why"] or v.detail     # the first such example's own reason
        if not contract.exact and v.ratio < float("inf"):
            # steer the search toward the worst discrepancy relative to its bound
            target(min(v.ratio, 1e6), label="discrepancy / bound")
        if not v.violated and (seen["best"] is None or v.ratio > seen["best"].ratio):
            seen["best"] = v
            seen["worst"] = hashlib.sha256(drawn).hexdigest()[:16]     # the example the reported bound is from
        if v.violated and "found_at" not in seen:
            seen["found_at"] = seen["n"]       # the search's first violation; the rest is shrinking
        if v.violated:
            seen["choices"] = _choices()       # the last violation is the one find() returns: stored shrunk
        return v.violated

    strategy = cases(op, dtype, backend=backend, **contract.fuzz_bounds)
    key = database_key(op.name, contract.name, backend, dtype_name(dtype), mutant)
    with pinned_constants(), hypothesis.reporting.with_reporter(_to_stderr):
        found = None if database is None else _replay_stored(strategy, is_violation, database, key)
        replayed = found is not None
    try:
        if found is None:
            # the seeded search: Hypothesis neither reads nor writes a database under an explicit seed, so
            # the database was replayed above and the shrunk violation is stored below
            cfg = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                           suppress_health_check=list(HealthCheck),
                           phases=(Phase.generate, Phase.target, Phase.shrink))
            with pinned_constants(), hypothesis.reporting.with_reporter(_to_stderr):
                found = find(strategy, is_violation, settings=cfg, random=random.Random(seed))
            if database is not None and seen.get("choices") is not None:
                database.save(key, choices_to_bytes(seen["choices"]))
    except NoSuchExample:
        best = seen["best"] or V.holds()
        judged, needed = seen["n"] - seen["inconclusive"], min_judged(min(seen["n"], examples))
        status, detail = V.HOLDS, best.detail
        if judged < needed:
            status, detail = V.VACUOUS, _vacuous(judged, needed, seen)
            if seen["n"] and seen["not_runnable"] == seen["n"]:
                status, detail = V.NOT_RUNNABLE, seen["why"]      # no example could be asked at all
        blind = [name for name, (_, rows, no_oracle) in aside.items() if rows and no_oracle == rows]
        if blind and status == V.HOLDS:
            status = V.VACUOUS
            detail = (f"vacuous: every row of the regime(s) {', '.join(blind)} was set aside (" +
                      ", ".join(f"{name} {aside[name][1]} rows" for name in blind) +
                      "; the oracle was not finite there): nothing was judged there; " + detail)
        detail, extra = _coverage(detail, dict(best.extra), visits, seen, searched, limit)
        if any(counts[1] for counts in aside.values()):
            extra["set_aside_by_regime"] = {name: counts[:2] for name, counts in aside.items() if counts[1]}
        extra["judged_examples"] = judged
        extra["draws"] = ran.hexdigest()[:16]
        if seen["worst"] is not None and not contract.exact:
            # the example the reported bound is from (a digest of its drawn choices): the gate compares two
            # cells' bounds only on the same example (regressions._tolerance)
            extra["worst"] = seen["worst"]
        return V.Verdict(status, best.discrepancy, best.bound, detail, examples=seen["n"],
                         seconds=time.perf_counter() - start, dtype=dtype_name(dtype), extra=extra,
                         inconclusive=best.inconclusive)
    v = contract.judge(found)
    judged = V.Verdict(v.status, v.discrepancy, v.bound, v.detail)   # what a replay re-judges: no search notes
    detail, extra = _coverage(v.detail, dict(v.extra), visits, seen, searched, limit)
    extra["found_at"] = seen.get("found_at", seen["n"])
    extra["draws"] = ran.hexdigest()[:16]
    if replayed:
        extra["from_database"] = True        # a stored counterexample, replayed: no search ran
        detail += " [replayed from the example database]"
    v = dataclasses.replace(v, detail=detail, extra=extra, counterexample=found.describe(), examples=seen["n"],
                            seconds=time.perf_counter() - start, dtype=dtype_name(dtype))
    if replay_dir is not None and v.violated:
        v = dataclasses.replace(v, replay=R.store(found, contract.name, judged, replay_dir, mutant=mutant))
    return v



def database_key(operator: str, contract: str, backend: str, dtype: str, mutant: str | None = None) -> bytes:
    """The example-database key of one cell (a mutant's cells keep their own: its bugs are not the code's).

    >>> database_key("sdpa", "null_receiver", "eager", "float32")
    b'tokenlaw:sdpa-null_receiver-eager-float32'
    """
    cell = f"{operator}-{contract}-{backend}-{dtype}"
    return f"tokenlaw:{cell}" .encode() if mutant is None else f"tokenlaw:mutant={mutant}:{cell}".encode()


def _replay_stored(strategy, is_violation, database, key):
    """The first of the counterexamples ``database`` stores under ``key`` that still violates, as stored; or None.

    Only the cell's own stored counterexamples are replayed, in Hypothesis' order (shortlex), with no
    search and no shrinking: the same database contents give the same verdict, and the violation is the
    very counterexample a campaign stored.  They are replayed from a copy, so the database is never
    changed here (an entry that no longer fails stays for the runs that still fail on it).
    """
    stored = sorted(set(database.fetch(key)))
    if not stored:
        return None
    copy = InMemoryExampleDatabase()
    for value in stored:
        copy.save(key, value)
    cfg = settings(max_examples=len(stored), deadline=None, database=copy, derandomize=False,
                   suppress_health_check=list(HealthCheck), phases=(Phase.reuse,))
    try:
        return find(strategy, is_violation, settings=cfg, database_key=key)
    except NoSuchExample:
        return None


def _choices():
    """The choice sequence of the example being judged (what the database stores), or None where this
    Hypothesis keeps it elsewhere (internal: ``ConjectureData.choices``)."""
    try:
        return tuple(current_build_context().data.choices)
    except Exception:  # noqa: BLE001 -- not storing is the safe fallback; the verdict does not depend on it
        return None


def _vacuous(judged: int, needed: int, seen: dict) -> str:
    """Why a cell is vacuous: how many examples were judged, and why the others said nothing."""
    rows = (f"; over the run {seen['threshold']} rows set aside at a threshold, {seen['not_finite']} with a "
            f"non-finite float64 value") if seen["set_aside"] else ""
    why = f", the first: {seen['why']}" if seen["why"] else ""
    return (f"vacuous: {judged} of {seen['n']} examples judged, fewer than the {needed} needed (a tenth of the "
            f"examples run, at least 1: engine.min_judged); {seen['inconclusive']} judged nothing{why}{rows}")


SHAPE_AXES = ("n", "d", "batch", "heads")


def _widen(searched: dict, case) -> None:
    """Widen the [min, max] of each shape axis to this case's n, d, batch and (effective) heads."""
    declared = first_param(case.params, case.op.domain.roles.heads)
    heads = case.heads if case.heads is not None else (None if declared is None else int(declared))
    for axis, value in zip(SHAPE_AXES, (case.n, case.d, case.batch, heads)):
        if value is not None:
            lo, hi = searched.get(axis, (value, value))
            searched[axis] = [min(lo, value), max(hi, value)]


def searched_text(searched: dict) -> str:
    """``n 1..130, d 1..128, batch 1..4, heads 1..64``: the shape ranges a cell's search drew."""
    return ", ".join(f"{a} {searched[a][0]}..{searched[a][1]}" for a in SHAPE_AXES if a in searched)


def _coverage(detail: str, extra: dict, visits: dict, seen: dict, searched: dict | None = None,
              limit=None) -> tuple[str, dict]:
    """Add the shapes searched, the declared limit, the regimes visited (examples per regime), the
    unvisited ones and the set-aside counts."""
    extra["searched"] = {a: list(r) for a, r in (searched or {}).items()}
    if limit is not None:
        extra["limit"] = {"scores": limit.scores, "norm2": limit.norm2, "offset": limit.offset, "reason": limit.reason}
    extra["regimes"] = dict(visits)
    extra["unvisited_regimes"] = [n for n, k in visits.items() if k == 0]
    extra["set_aside_rows"] = seen["set_aside"]
    extra["inconclusive_examples"] = seen["inconclusive"]
    notes = []
    if searched:
        notes.append("searched " + searched_text(searched))
    if limit is not None:
        notes.append(f"declared limit {limit.bounds()}: {limit.reason}")
    if visits:
        notes.append("regimes " + ", ".join(f"{n} {k}" for n, k in visits.items()))
    if extra["unvisited_regimes"]:
        notes.append("NEVER visited: " + ", ".join(extra["unvisited_regimes"]))
    if seen["set_aside"]:
        notes.append(f"{seen['set_aside']} rows set aside over the run")
    if seen["inconclusive"]:
        notes.append(f"{seen['inconclusive']} examples inconclusive")
    return (detail + (" [" + "; ".join(notes) + "]" if notes else "")), extra
