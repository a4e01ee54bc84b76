"""Run one cell with Hypothesis: search for a violation, shrink it, store it for replay.

Claims and expected violations share one body: ``hypothesis.find`` searches
the operator's domain for an example the contract judges violated.  Finding
one (shrunk to a minimal example) reproduces an expected violation or
exposes an unexpected one, and is stored as a replay artifact
(:mod:`tokenlaw.fuzz.replay`) whose id the verdict carries; exhausting the
example budget means the law held on every example tried -- provided
enough of them were judged (:func:`min_judged`): a cell whose examples were
nearly all inconclusive (every row set aside, outside the error model) is
``vacuous``, never ``holds``; an example compared only where both sides are
exactly 0 (:func:`trivially`) is not counted as judged, a regime the
contract depends on that nothing judged gets examples of its own
(:func:`_fill_regimes`), and one whose every row still had no finite oracle
makes the cell ``vacuous`` too (:func:`unjudged` states which regimes are
reported and which decide).  Either way the verdict
records how many examples ran, how many were judged (per regime as well),
the distribution of shapes drawn (:data:`LENGTH_BANDS`) and the largest
discrepancy seen relative to its bound.

A violation found is never un-found: two judgements of one input that
disagree (the determinism probe on the first example, Hypothesis' replays,
the re-judgement of the example ``find()`` returned) make the verdict the
violation, stated as a nondeterministic operator (``extra["nondeterministic"]``),
never ``holds`` and never Hypothesis' ``FlakyFailure``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
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
from hypothesis.errors import Flaky, NoSuchExample

try:        # optional: Hypothesis internals (the pool of mined constants; see pinned_constants)
    from hypothesis.internal.conjecture import providers as _providers
except ImportError:
    _providers = None

from tokenlaw.process import interrupts
from tokenlaw.properties import backends
from tokenlaw.properties import verdict as V
from tokenlaw.properties.contract import Gap
from tokenlaw.properties.evidence import FuzzEvidence
from tokenlaw.operators.dtypes import name as dtype_name
from tokenlaw.properties.profiles import ALIASES, DEFAULT_PROFILE, PROFILES, Profiles, profile_name  # noqa: F401 (re-exported)

from . import replay as R
from . import shrink
from .regimes import LENGTH_BANDS, REGIMES, applicable, band_label, first_param, visited
from .strategies import (BLOCK_EDGES, FILL, PAST_ONE, banded_find, cases, fill_size, length_band, length_label,
                         missed_bands, reachable_bands, reachable_edges, reachable_lengths)

# A cell is evidence only if enough of its examples were *judged* (not inconclusive: every row set
# aside, or the example outside the error model).  With k judged examples and no violation, the rate
# of inputs that would violate the law is below 3/k at 95% confidence (the rule of three); a
# profile's budget N promises 3/N.  A cell whose k is under a tenth of the examples it ran (at most
# N plus the examples banded_find gave the length bands the search missed) has a bound more than ten
# times weaker than its profile promises: it is ``vacuous``, not ``holds`` (never green, as in the
# symbolic tier).  Per profile: smoke 1, ci 10, thorough 30, deep 200 (``MIN_JUDGED``).
JUDGED_FRACTION = 10


def min_judged(examples: int) -> int:
    """The fewest judged examples a cell that ran ``examples`` examples needs: a tenth, at least 1.

    >>> min_judged(100), min_judged(10), min_judged(1), min_judged(65)
    (10, 1, 1, 7)
    """
    return max(1, -(-examples // JUDGED_FRACTION))


MIN_JUDGED = Profiles({name: min_judged(n) for name, n in PROFILES.items()})

# Examples judged so far by this process (and, when a run shares one across its forked workers, by
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


class _FirstViolation(BaseException):
    """Raised out of Hypothesis at a search's first violation under ``run_cell(first_violation=True)``: a
    BaseException, so Hypothesis neither shrinks it nor replays it (measured: it propagates at once)."""


def run_cell(op, contract, dtype: torch.dtype, *, examples: int = 25, seed: int = 0, backend: str = backends.EAGER.name,
             database=None, replay_dir=R.DEFAULT_DIR, mutant: str | None = None,
             first_violation: bool = False) -> V.Verdict:
    """Judge ``contract`` for ``op`` in ``dtype`` on up to ``examples`` drawn cases.

    seed:       orders the search (the same seed and database contents: the same verdict);
    database:   a Hypothesis ExampleDatabase (see :mod:`tokenlaw.fuzz.database`) or None: its stored
                counterexamples of this cell are replayed first, as stored (:func:`_replay_stored`); if
                none still fails, the seeded search runs and a violation it finds is stored there, shrunk;
    replay_dir: where a violation's artifact is written (None: not stored);
    mutant:     the name of the active mutant, recorded in the artifact;
    first_violation: stop at the search's first violation (the first example judged violated, or the first
                disagreement of two judgements of one input), unshrunk and stored nowhere: the verdict has
                that judgement's status (``violated``, ``refuted`` or ``raised``).  The full search's verdict
                on the same cell is a violation too (a violation found is never un-found), so a *claimed*
                row fails either way; the adversary (:mod:`.adversary`) uses it there, where only whether
                the row fails matters.  Not for an expected violation: there ``raised`` and ``violated``
                decide the row differently, and the shrunk example may raise where the first did not.
    """
    impl = backends.get(backend)
    reason = contract.skip(op, dtype_name(dtype), impl) if contract.skip else None
    if reason:
        status = V.Status.NOT_RUNNABLE if isinstance(reason, Gap) else V.Status.NOT_APPLICABLE_BY_DESIGN
        return V.Verdict(status, detail=reason, dtype=dtype_name(dtype))
    why = impl.not_runnable(dtype_name(dtype))
    if why:
        return V.Verdict(V.Status.NOT_RUNNABLE, detail=why, dtype=dtype_name(dtype),
                         tier="fuzz" if impl.reference else "kernel")
    start = time.perf_counter()
    seen = {"n": 0, "best": None, "set_aside": 0, "inconclusive": 0, "trivial": 0, "threshold": 0, "not_finite": 0,
            "not_runnable": 0, "why": None, "worst": None, "probes": 0, "outside": 0}
    # every example the search ran, in order: two runs drew the same inputs iff these digests agree (the
    # search is steered by discrepancy / bound, so another CPU's rounding can send it elsewhere)
    ran = hashlib.sha256()
    searched = {}          # shape axis -> [min, max] of the drawn values
    drawn_bands = {}       # shape axis -> {band label: examples} (:func:`_count_drawn`)
    limit = op.domain.limit(dtype_name(dtype))
    wanted = applicable(op, contract.regimes, dtype)
    visits = dict.fromkeys(wanted, 0)
    accounts = {name: Account() for name in wanted}
    tally = {}             # length band -> [examples, judged] (:func:`_top_up` reads the band n = 1)
    # the first judgement of every distinct input (a digest of its drawn fields, which rebuild it): a second
    # judgement of the same input that disagrees on violated-or-not is a nondeterministic operator
    first = {}

    def nondeterministic(case, earlier, later, how):
        seen["nondeterministic"] = {"case": case, "first": earlier, "second": later, "how": how}

    def is_violation(case) -> bool:
        interrupts.checkpoint()         # a Ctrl-C the interpreter dropped (issue 47) stops the run here
        if "nondeterministic" in seen:
            # decided: every further example "fails", so Hypothesis shrinks a predicate that never changes
            # its answer (cheap, and no FlakyFailure); the verdict is the recorded disagreement
            return True
        _widen(searched, case)
        _count_drawn(drawn_bands, case)
        drawn = json.dumps(case.fields(), sort_keys=True, default=repr).encode()
        digest = hashlib.sha256(drawn).hexdigest()[:16]
        ran.update(drawn + b"\n")
        if limit is not None and not limit.inside(case.x, case.params):
            # outside the operator's declared limit (Limit.predicate): set aside unjudged, and counted; never a
            # violation, so the search and its shrinking stay inside
            seen["n"] += 1
            seen["outside"] += 1
            _count_example()
            return False
        v = contract.judge(case)
        seen["n"] += 1
        _count_example()
        earlier = first.setdefault(digest, v)
        if earlier.violated != v.violated:
            # the same input judged again (Hypothesis' final replay of the shrunk violation, a database entry,
            # two choice sequences drawing one input) disagrees: caught here, before Hypothesis calls it flaky
            nondeterministic(case, earlier, v, "the same input judged again during the search")
            return True
        if seen["n"] == 1:
            again = _probe(contract, case, v, seen)
            if again.violated != v.violated:
                nondeterministic(case, v, again, "the determinism probe: the first example judged again")
                return True
        regimes = visited(case, wanted)
        for name in regimes:
            visits[name] += 1
            event("regime", name)          # a fuzzer's coverage (and Hypothesis' statistics) count regimes too
            accounts[name].add(v)
        seen["threshold"] += v.extra.get("set_aside_threshold", 0)
        seen["not_finite"] += v.extra.get("set_aside_not_finite", 0)
        seen["set_aside"] = seen["threshold"] + seen["not_finite"]
        if v.inconclusive or v.status == V.Status.NOT_RUNNABLE:
            # judged nothing: every row set aside, outside the error model, or unanswerable here
            seen["inconclusive"] += 1
            seen["not_runnable"] += v.status == V.Status.NOT_RUNNABLE
            seen["why"] = seen["why"] or v.detail     # the first such example's own reason
        elif trivially(v):
            seen["trivial"] += 1                      # compared only where every candidate is exactly 0
            seen["why"] = seen["why"] or v.detail
        counts = tally.setdefault(length_band(case.n), [0, 0])
        counts[0] += 1
        counts[1] += not (v.inconclusive or v.status == V.Status.NOT_RUNNABLE or trivially(v))
        if not contract.exact and v.ratio < float("inf"):
            # steer the search toward the worst discrepancy relative to its bound
            target(min(v.ratio, 1e6), label="discrepancy / bound")
        if not v.violated and (seen["best"] is None or v.ratio > seen["best"].ratio):
            seen["best"] = v
            seen["worst"] = digest     # the example the reported bound is from
            seen["worst_case"] = case
        if v.violated and "found_at" not in seen:
            seen["found_at"] = seen["n"]       # the search's first violation; the rest is shrinking
            seen["found_shape"] = shrink.shape(case)
        if v.violated:
            seen["choices"] = _choices()       # the last violation is the one find() returns: stored shrunk
            seen["violation"] = {"case": case, "first": v}
        return v.violated

    def stopping(case) -> bool:
        if is_violation(case):
            raise _FirstViolation
        return False

    def finish(v, judged, case, evidence):
        """``v`` with the search's evidence; ``judged``: the contract's own verdict on ``case`` (what a replay
        re-judges, stored as the artifact's evidence)."""
        evidence = dataclasses.replace(evidence, draws=ran.hexdigest()[:16], probes=seen["probes"])
        v = dataclasses.replace(v, evidence=evidence, counterexample=case.describe(), examples=seen["n"],
                                seconds=time.perf_counter() - start, dtype=dtype_name(dtype))
        if replay_dir is not None and v.violated:
            evidence = V.Verdict(judged.status, judged.discrepancy, judged.bound, judged.detail)
            v = dataclasses.replace(v, replay=R.store(case, contract.name, evidence, replay_dir, mutant=mutant))
        return v

    def coverage(**fields) -> FuzzEvidence:
        return _coverage(visits, seen, searched, limit, accounts, drawn_bands, bands, lengths, **fields)

    strategy = cases(op, dtype, backend=backend, **contract.fuzz_bounds)
    # the length bands the cell can reach (a q/k/v core case draws its own lengths L and S: no band of n)
    bands = () if contract.fuzz_bounds.get("core") else reachable_bands(backend=backend, **contract.fuzz_bounds)
    lengths = () if contract.fuzz_bounds.get("core") else reachable_lengths(backend=backend, **contract.fuzz_bounds)
    filled = []     # the bands and regimes given FILL examples of their own (they join the budget judged against)
    topped = []     # examples of the judged top-up (:func:`_top_up`; they join the budget too)
    key = database_key(op.name, contract.name, backend, dtype_name(dtype), mutant)
    if first_violation:
        database, replay_dir, judge_case = None, None, stopping
    else:
        judge_case = is_violation
    try:
        with pinned_constants(), hypothesis.reporting.with_reporter(_to_stderr):
            found = None if database is None else _replay_stored(strategy, judge_case, database, key)
        replayed = found is not None
        if found is None:
            # the seeded search: Hypothesis neither reads nor writes a database under an explicit seed, so
            # the database was replayed above and the shrunk violation is stored below
            cfg = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                           suppress_health_check=list(HealthCheck),
                           phases=(Phase.generate, Phase.target, Phase.shrink))
            with pinned_constants(), hypothesis.reporting.with_reporter(_to_stderr):
                # the seeded search, then FILL examples in each length band it never drew and at each explicit
                # edge (strategies.banded_find; a q/k/v core case draws its own lengths L and S: no band of n)
                try:
                    found = banded_find(lambda band: strategy if band is None else (filled.append(band) or cases(
                        op, dtype, backend=backend, band=band, **contract.fuzz_bounds)), judge_case, cfg, seed, bands,
                        reachable_edges(op, dtype, **contract.fuzz_bounds), lengths)
                except NoSuchExample:
                    # then FILL examples in each regime the contract depends on that nothing judged yet
                    try:
                        found = _fill_regimes(strategy, judge_case, cfg, seed, accounts, dtype, limit, filled)
                    except NoSuchExample:
                        # then, short of judged examples with n = 1 judging none, a search past n = 1
                        budget = examples + sum(map(fill_size, filled))
                        found = _top_up(lambda: cases(op, dtype, backend=backend, band=PAST_ONE,
                                                      **contract.fuzz_bounds),
                                        judge_case, cfg, seed, seen, tally, bands, budget, examples, topped)
            if database is not None and seen.get("choices") is not None and "nondeterministic" not in seen:
                database.save(key, choices_to_bytes(seen["choices"]))
    except _FirstViolation:
        record = seen.get("nondeterministic")
        v = _nondeterminism(record) if record is not None else seen["violation"]["first"]
        evidence = dataclasses.replace(v.evidence or FuzzEvidence(), found_at=seen.get("found_at", seen["n"]),
                                       first_violation=True)
        return dataclasses.replace(v, evidence=evidence, examples=seen["n"], seconds=time.perf_counter() - start,
                                   dtype=dtype_name(dtype),
                                   counterexample=(record or seen["violation"])["case"].describe())
    except Flaky:
        # Hypothesis saw one input fail and then pass (or the reverse) where the engine's own comparison did
        # not: the same finding; without a recorded disagreement it is no operator's (re-raised)
        if "nondeterministic" not in seen:
            if "violation" not in seen:
                raise
            seen["nondeterministic"] = {**seen["violation"], "how": "Hypothesis ran a violating input again and "
                                        "it did not fail (hypothesis.errors.Flaky)",
                                        "second": V.holds(detail="not violated when Hypothesis ran it again")}
        found, replayed = None, False
    except NoSuchExample:
        best = seen["best"] or V.holds()
        # the budget: the profile's examples and FILL per band or regime filled (not Hypothesis' replays)
        judged = seen["n"] - seen["inconclusive"] - seen["trivial"] - seen["outside"]
        needed = min_judged(min(seen["n"], examples + sum(map(fill_size, filled)) + sum(topped)))
        status, detail = V.Status.HOLDS, best.detail
        if judged < needed:
            status, detail = V.Status.VACUOUS, _vacuous(judged, needed, seen)
            if seen["n"] and seen["not_runnable"] == seen["n"]:
                status, detail = V.Status.NOT_RUNNABLE, seen["why"]      # no example could be asked at all
        regimes = unjudged(accounts)
        if regimes.blind and status == V.Status.HOLDS:
            status = V.Status.VACUOUS
            detail = (f"vacuous: every row of the regime(s) {', '.join(regimes.blind)} was set aside (" +
                      ", ".join(f"{name} {accounts[name].rows} rows" for name in regimes.blind) +
                      "; the oracle was not finite there): nothing was judged there; " + detail)
        evidence = coverage(
            set_aside_by_regime={name: [a.set_aside_rows, a.rows] for name, a in accounts.items() if a.rows} or None,
            judged=judged, draws=ran.hexdigest()[:16], probes=seen["probes"],
            # the example the reported bound is from (a digest of its drawn choices): the gate compares two
            # cells' bounds only on the same example (regressions._tolerance)
            worst=seen["worst"] if not contract.exact else None)
        extra = dict(best.extra)
        if topped:
            ones = tally.get("1", [0, 0])[0]
            extra["top_up"] = {"lengths": PAST_ONE, "examples": sum(topped), "n=1": ones}
            evidence = dataclasses.replace(evidence, notes="; ".join(filter(None, (
                evidence.notes, f"top-up: n = 1 judged none of its {ones} examples, so {sum(topped)} more were "
                                "searched at n >= 2"))))
        if seen["worst"] is not None and not contract.exact:
            # the worst example's drawn fields (Case.from_fields rebuilds it): the gate judges the baseline's
            # worst example again in its re-run, so a bound that grew is compared on that example (orchestration.gate)
            extra["worst_case"] = seen["worst_case"].fields()
        return V.Verdict(status, best.discrepancy, best.bound, detail, examples=seen["n"],
                         seconds=time.perf_counter() - start, dtype=dtype_name(dtype), extra=extra,
                         inconclusive=best.inconclusive, evidence=evidence)
    if "nondeterministic" not in seen:
        # the smallest shape and plainest values that still violate (fuzz/shrink.py: a band fill or a stored
        # example shrinks no further than its draws), then judged once more: a violation found is never
        # un-found, so a re-judgement that disagrees is the nondeterminism finding, not the cell's verdict
        shrunk_from = shrink.shape(found)
        found, spent = shrink.descend(found, contract, seen["violation"]["first"], bounds=contract.fuzz_bounds)
        seen["probes"] += spent
        v = contract.judge(found)
        seen["probes"] += 1
        if not v.violated:
            digest = hashlib.sha256(json.dumps(found.fields(), sort_keys=True, default=repr).encode()).hexdigest()[:16]
            earlier = first.get(digest)
            if earlier is None or not earlier.violated:
                earlier = seen["violation"]["first"]       # find() returns the last input judged violated
            nondeterministic(found, earlier, v, "the found violation judged again")
    if "nondeterministic" in seen:
        record = seen["nondeterministic"]
        v = _nondeterminism(record)
        evidence = coverage(nondeterministic=v.evidence.nondeterministic, found_at=seen.get("found_at", seen["n"]))
        bad = record["first"] if record["first"].violated else record["second"]
        return finish(v, bad, record["case"], evidence)
    evidence = coverage(found_at=seen.get("found_at", seen["n"]),
                        shrink={"first": seen.get("found_shape", shrunk_from), "hypothesis": shrunk_from,
                                "final": shrink.shape(found), "judgements": spent},
                        from_database=replayed)      # a stored counterexample, replayed: no search ran
    return finish(v, v, found, evidence)


def trivially(v: V.Verdict) -> bool:
    """The example was compared only where every candidate agrees (both sides exactly 0): no value judged."""
    return bool(v.extra.get("trivial")) and not v.violated


def withheld(v: V.Verdict) -> bool:
    """Rows were set aside as non-finite in float64, and what was left compared no value (no row at all, or
    only exact zeros): the values that could tell were withheld, not judged."""
    if not v.extra.get("set_aside_not_finite", 0) or v.violated:
        return False
    return trivially(v) or bool(v.inconclusive and v.extra.get("set_aside_not_finite", 0)
                                + v.extra.get("set_aside_threshold", 0) >= v.extra.get("rows", 0))


# The fields of extra["regime_accounting"], per regime (the report's schema: Account.json).
ACCOUNT = ("visited", "judged", "inconclusive", "trivial", "withheld", "set_aside_rows")


@dataclasses.dataclass
class Account:
    """What one regime of a cell saw: every example that visited it, added once (:meth:`add`).

    visited:        examples that visited the regime; of them
    judged:         a verdict on a value;
    inconclusive:   judged nothing (every row set aside, outside the error model, not runnable);
    trivial:        compared only where both sides are exactly 0 (:func:`trivially`);
    withheld:       of the inconclusive and trivial ones, those whose values were withheld (:func:`withheld`);
    set_aside_rows: output rows set aside (properties.differential_laws.set_aside: a threshold or a
                    non-finite float64 value, the declared reference's for spec_reference), of
    rows:           the output rows of the visiting examples that compared rows, of which
    no_oracle_rows: were set aside because the float64 value was not finite.
    """

    visited: int = 0
    judged: int = 0
    inconclusive: int = 0
    trivial: int = 0
    withheld: int = 0
    set_aside_rows: int = 0
    rows: int = 0
    no_oracle_rows: int = 0

    def add(self, v: V.Verdict) -> None:
        """Count one visiting example's verdict."""
        not_finite = v.extra.get("set_aside_not_finite", 0)
        self.visited += 1
        self.set_aside_rows += v.extra.get("set_aside_threshold", 0) + not_finite
        self.rows += v.extra.get("rows", 0)
        self.no_oracle_rows += not_finite
        self.withheld += withheld(v)
        if v.inconclusive or v.status == V.Status.NOT_RUNNABLE:
            self.inconclusive += 1
        elif trivially(v):
            self.trivial += 1
        else:
            self.judged += 1

    def json(self) -> dict:
        """The report's record (extra["regime_accounting"][name]): the :data:`ACCOUNT` fields."""
        return {f: getattr(self, f) for f in ACCOUNT}


@dataclasses.dataclass(frozen=True)
class Unjudged:
    """The regimes a cell visited but never judged on a value (:func:`unjudged`)."""

    named: tuple        # reported: extra["unjudged_regimes"] and "visited but NEVER judged" in the detail
    blind: tuple        # of them, the regimes that make the cell vacuous


def unjudged(accounts: dict) -> Unjudged:
    """The regimes of ``accounts`` ({name: :class:`Account`}) visited but never judged, and what each decides.

    Two outcomes:

    * **vacuous** (``blind``): every output row the regime's examples compared was set aside because the
      float64 value was not finite (rows > 0, all without an oracle).  Nothing was or could be judged there:
      a reference written naively as exp(s) / sum exp(s) is NaN exactly at large scores, and a bug there would
      hide behind it.  A regime whose rows were set aside at a declared threshold does not decide this
      (bfloat16 puts every large-score row of pn_fir_c within its roundoff of the threshold, where no rounding
      bound exists for any oracle): those rows are counted (extra["set_aside_by_regime"]), not blind.
    * **reported** (``named``, a superset of ``blind``): a regime every visiting example of which was
      inconclusive or trivially judged.  The others among them do not decide the status: inconclusive for the
      error model's reason alone (the dtype's rounding leaves the first-order model: no comparison in this
      dtype can judge there), trivial with every row compared (the operator and its reference are exactly 0
      on the whole input: a rectified normaliser below its threshold, where no wrong value can show), or
      values withheld on only some rows (``Account.withheld``).  Measured on the default registry at seed 0,
      counting those too made 7 of its 25 runnable spec_reference rows and 18 of its 39 float16 differential
      rows vacuous, most on one or two scores_high examples float16 cannot resolve (docs/fuzz.md).

    The search gives each such regime examples of its own before this is asked (:func:`_fill_regimes`).
    """
    named = tuple(n for n, a in accounts.items() if a.visited and not a.judged)
    return Unjudged(named=named, blind=tuple(n for n in named if accounts[n].rows
                                             and accounts[n].no_oracle_rows == accounts[n].rows))


def _fill_regimes(strategy, is_violation, cfg, seed: int, accounts: dict, dtype, limit, filled: list):
    """The first violation among :data:`FILL` examples drawn in each regime of ``accounts`` nothing judged yet
    (never visited, or visited but never judged on a value), where the regime pins (``Regime.pin``); each
    regime filled is appended to ``filled``.  Raises NoSuchExample when none violated, like ``find``.

    The seeded search draws a regime at its share, no guarantee: Hypothesis favours the first of a
    ``sampled_from`` and the smallest integers, so row-wide score offsets are negative about five times as
    often as positive (measured: 900 draws of standard_host in bfloat16, 109 at -97.6, 17 at +97.6), and at
    seed 0 the few scores_high examples of the softmax hosts' bfloat16 differential cells all had an
    ``empty_row`` mask, whose fully masked row is NaN in float64 and spreads to every token in block 2: the
    regime was visited and nothing in it judged.  Examples of its own, drawn like any other and then pinned
    into the regime, reach it with other masks, shapes and tokens; a regime they still leave unjudged is
    reported (and vacuous where it is blind: :func:`unjudged`).  The search's own draws are untouched.
    """
    for name, account in accounts.items():
        pin = REGIMES[name].pin
        fields = None if pin is None or account.judged else pin(dtype, limit)
        if fields is None:
            continue
        filled.append(name)
        try:
            return find(strategy.map(functools.partial(dataclasses.replace, **fields)), is_violation,
                        settings=settings(cfg, max_examples=FILL), random=random.Random(seed))
        except NoSuchExample:
            pass
    raise NoSuchExample("no regime fill violated")


def _judged(seen: dict) -> int:
    return seen["n"] - seen["inconclusive"] - seen["trivial"] - seen["outside"]


def _top_up(strategy_past_one, is_violation, cfg, seed: int, seen: dict, tally: dict, bands: tuple, budget: int,
            examples: int, topped: list):
    """A second seeded search of ``examples`` examples at n >= 2 (``cases(band=PAST_ONE)``), where the cell is
    short of judged examples (fewer than :func:`min_judged` of its ``budget``) and its n = 1 examples (at least
    :data:`FILL`) judged none; the examples run are appended to ``topped`` (they join the budget judged
    against: the bar rises with them).  Raises NoSuchExample when none violated (or nothing to top up).

    Why: for some operators n = 1 decides nothing about a value.  tabular_otransformer standardises each
    feature over the tokens, so a lone token is 0 and its output exactly 0 on both sides (trivially judged);
    pn_fir_c centres each row's scores over its visible keys, so row 0 (the only row at n = 1) sits exactly on
    its threshold and is set aside.  Hypothesis favours the smallest band index, and its target phase climbs
    around the first simplest example where every ratio is 0: at seeds 1 and 2 the bfloat16 differential cells
    drew n = 1 in 58 to 64 of 112 examples, judged 0 or 1, and read vacuous (seed 0: 14 at n = 1, 49 judged).
    The bar is unchanged (a tenth of every example run, the top-up's included); the top-up only spends a
    budget where the search's own draws showed n = 1 could not be judged."""
    ones = tally.get("1", [0, 0])
    if (len(bands) < 2 or "1" not in bands or ones[0] < FILL or ones[1]
            or _judged(seen) >= min_judged(min(seen["n"], budget))):
        raise NoSuchExample("no top-up")
    before = seen["n"]
    try:
        return find(strategy_past_one(), is_violation, settings=settings(cfg, max_examples=examples),
                    random=random.Random(seed))
    finally:
        topped.append(seen["n"] - before)


def _probe(contract, case, v: V.Verdict, seen: dict) -> V.Verdict:
    """The determinism probe: the first example judged again, and if it agrees, once more after one extra
    call of the operator; the first judgement that disagrees with ``v`` (else the last one).

    A judgement calls the operator k times.  An operator wrong on every p-th call (a counter, a race that
    alternates) gives two judgements k calls apart the same pattern when p divides k; the third
    judgement, k + 1 calls after the second, falls on another phase whenever p = 2 or 3 divides k, and
    the second already does where it does not.  Cost: two judgements and one call per cell.
    """
    seen["probes"] += 1
    again = contract.judge(case)
    if again.violated != v.violated:
        return again
    try:
        case.runner.run(case.x, case.mask)      # one call, its result unused: only the call count moves
    except Exception:  # noqa: BLE001 -- a call that raises moves the count too; the judgements see the raise
        pass
    seen["probes"] += 1
    return contract.judge(case)


def _nondeterminism(record: dict) -> V.Verdict:
    """The finding for two judgements of one input that disagree: the violation stands, the disagreement stated."""
    a, b = record["first"], record["second"]
    bad, other = (a, b) if a.violated else (b, a)
    record = {"how": record["how"], "judgements": [str(a.status), str(b.status)],
              "discrepancies": [_num(a.discrepancy), _num(b.discrepancy)],
              "bounds": [_num(a.bound), _num(b.bound)], "other": other.detail}
    detail = (f"nondeterministic operator: one input judged twice gave {a.status} then {b.status} "
              f"({record['how']}); the violation stands: {bad.detail}")
    return V.Verdict(bad.status, bad.discrepancy, bad.bound, detail, extra=dict(bad.extra), raised=bad.raised,
                     evidence=FuzzEvidence(nondeterministic=record))


def _num(x: float):
    return x if x == x and abs(x) != float("inf") else str(x)


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
    trivial = (f", {seen['trivial']} only trivially (every compared value exactly 0 on both sides)"
               if seen.get("trivial") else "")
    outside = (f", {seen['outside']} outside the declared limit (Limit.predicate), set aside unjudged"
               if seen.get("outside") else "")
    return (f"vacuous: {judged} of {seen['n']} examples judged, fewer than the {needed} needed (a tenth of the "
            f"examples run, at least 1: engine.min_judged); {seen['inconclusive']} judged nothing{trivial}{outside}"
            f"{why}{rows}")


SHAPE_AXES = ("n", "d", "batch", "heads")


def _prime(k: int) -> bool:
    return k >= 2 and all(k % p for p in range(2, int(k ** 0.5) + 1))


def _heads(case):
    declared = first_param(case.params, case.op.domain.roles.heads)
    return case.heads if case.heads is not None else (None if declared is None else int(declared))


def _axes(case) -> dict:
    """The case's shape axes and their values: n, d, batch, heads (or what a case of another form names)."""
    if hasattr(case, "shape_axes"):
        return {a: v for a, v in case.shape_axes().items() if v is not None}
    return {a: v for a, v in zip(SHAPE_AXES, (case.n, case.d, case.batch, _heads(case))) if v is not None}


def _count_drawn(drawn: dict, case) -> None:
    """Count this case in its band of every shape axis (d also when odd, when prime; n also at a block edge:
    ``n=256``, :data:`~tokenlaw.fuzz.strategies.BLOCK_EDGES`)."""
    for axis, value in _axes(case).items():
        counts = drawn.setdefault(axis, dict.fromkeys(map(band_label, LENGTH_BANDS), 0))
        counts[length_band(int(value))] += 1
        if axis == "n" and int(value) in BLOCK_EDGES:
            counts[length_label(int(value))] = counts.get(length_label(int(value)), 0) + 1
        if axis in ("d", "E", "Ev"):
            counts["odd"] = counts.get("odd", 0) + value % 2
            counts["prime"] = counts.get("prime", 0) + _prime(value)


def drawn_text(drawn: dict) -> str:
    """``drawn n 1:3 2..8:40 ... 257+:0 edges 64:1 ... 257:1; d ... odd 12 prime 9``: the examples per band of n
    (and at each block edge) and of d."""
    parts = []
    for axis in ("n", "d", "L", "S", "E"):
        if axis in drawn:
            bands = " ".join(f"{b}:{drawn[axis][b]}" for b in map(band_label, LENGTH_BANDS))
            extra = f" odd {drawn[axis].get('odd', 0)} prime {drawn[axis].get('prime', 0)}" if axis == "d" else ""
            if axis == "n":
                extra = " edges " + " ".join(f"{e}:{drawn[axis].get(length_label(e), 0)}" for e in BLOCK_EDGES)
            parts.append(f"{axis} {bands}{extra}")
    return "drawn " + "; ".join(parts) if parts else ""


def _widen(searched: dict, case) -> None:
    """Widen the [min, max] of each shape axis to this case's n, d, batch and (effective) heads (or to the
    axes a case of another form names: ``shape_axes()``, e.g. L, S, E, Ev, batch, Hq, Hkv at the core)."""
    for axis, value in _axes(case).items():
        if value is not None:
            lo, hi = searched.get(axis, (value, value))
            searched[axis] = [min(lo, value), max(hi, value)]


def searched_text(searched: dict) -> str:
    """``n 1..130, d 1..128, batch 1..4, heads 1..64``: the shape ranges a cell's search drew."""
    axes = [a for a in SHAPE_AXES if a in searched] + [a for a in searched if a not in SHAPE_AXES]
    return ", ".join(f"{a} {searched[a][0]}..{searched[a][1]}" for a in axes)


def _coverage(visits: dict, seen: dict, searched: dict | None = None, limit=None, accounts: dict | None = None,
              drawn: dict | None = None, bands: tuple = (), lengths: tuple = (), **fields) -> FuzzEvidence:
    """The search's evidence: the shapes searched and drawn (examples per band), the length bands and block
    edges the cell could reach (``bands``, ``lengths``) and never drew, the declared limit, the regimes visited
    (examples per regime) and their accounting, the unvisited ones and the set-aside counts, with the notes
    that word them; ``fields``: the further fields of :class:`~tokenlaw.properties.evidence.FuzzEvidence`."""
    n_drawn = (drawn or {}).get("n", {})
    e = FuzzEvidence(
        searched={a: list(r) for a, r in (searched or {}).items()},
        drawn={a: dict(c) for a, c in (drawn or {}).items()}, missed_bands=list(missed_bands(n_drawn, bands)),
        missed_lengths=[n for n in lengths if not n_drawn.get(length_label(n))],
        accounting={n: a.json() for n, a in (accounts or {}).items()}, trivial=seen.get("trivial", 0),
        unjudged=list(unjudged(accounts or {}).named),
        limit=None if limit is None else {"scores": limit.scores, "norm2": limit.norm2, "offset": limit.offset,
                                          "reason": limit.reason,
                                          **({"predicate": limit.predicate_name} if limit.predicate is not None
                                             else {})},
        outside=seen.get("outside", 0),      # examples set aside by Limit.predicate, unjudged
        regimes=dict(visits), unvisited=[n for n, k in visits.items() if k == 0],
        set_aside=seen["set_aside"], inconclusive=seen["inconclusive"], **fields)
    notes = []
    if searched:
        notes.append("searched " + searched_text(searched))
    if drawn:
        notes.append(drawn_text(drawn))
    if e.missed_bands or e.missed_lengths:
        notes.append("NEVER drawn: n " + ", ".join(list(e.missed_bands) + [length_label(n) for n in e.missed_lengths]))
    if limit is not None:
        notes.append(f"declared limit {limit.bounds()}: {limit.reason}")
    if visits:
        notes.append("regimes " + ", ".join(f"{n} {k}" for n, k in visits.items()))
    if e.unvisited:
        notes.append("NEVER visited: " + ", ".join(e.unvisited))
    if seen["set_aside"]:
        notes.append(f"{seen['set_aside']} rows set aside over the run")
    if seen["inconclusive"]:
        notes.append(f"{seen['inconclusive']} examples inconclusive")
    if seen.get("trivial"):
        notes.append(f"{seen['trivial']} examples trivially judged (both sides exactly 0), not counted as judged")
    if seen.get("outside"):
        notes.append(f"{seen['outside']} examples outside the declared limit (Limit.predicate), set aside, "
                     "not counted as judged")
    short = [f"{n} {a.judged}/{a.visited}" for n, a in (accounts or {}).items() if a.visited and a.judged < a.visited]
    if short:
        notes.append("judged/visited per regime " + ", ".join(short))
    if e.unjudged:
        notes.append("visited but NEVER judged: " + ", ".join(e.unjudged))
    return dataclasses.replace(e, notes="; ".join(notes))
