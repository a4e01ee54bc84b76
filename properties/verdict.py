"""One verdict type for every tier, and the cell outcome derived from it.

A :class:`Verdict` is what a tier observed for one (operator, contract,
backend, dtype) cell: the law *holds* on every example tried, was *proved*
by a solver, was *violated* / *refuted* (with the evidence), is *unknown*
(solver timeout or give-up: never counted as proved), or is *not runnable*
here (with the reason).  The :func:`outcome` of a cell compares that
observation with the operator's declaration.

Three statuses say exactly how much less than a proof was established:

* ``holds_for_sampled_weights``: the solver proved the law with the weights
  fixed to one drawn sample (scalars symbolic): evidence like the fuzz tier's
  ``holds``, a pass for the exit code, never counted as ``proved``;
* ``vacuous``: no enumerated input (mask, case) satisfied the premises, so
  nothing was checked: never green, not a failure;
* ``not_traceable``: the operator's code does something the symbolic
  namespaces cannot model soundly (Python ``/``, a Python ``if`` on a traced
  value, a direct ``torch.*`` / ``math.*`` call...); the detail names the
  file and line.  Not runnable symbolically, not a failure of the suite.

Two more say what went wrong with the *evidence* rather than the law:

* ``trace_differs``: the symbolic trace did not follow the code the eager
  float64 run executes on the same (or on other in-domain) shapes -- a branch
  on ``isinstance``, on a shape, on a type -- or the traced expression does not
  evaluate to what eager returns; the detail names the first divergent
  file:line.  A proof of another path: never green (undecided);
* ``domain_mismatch``: a counterexample inside the declared domain is
  rejected by the eager code's own argument validation: the declaration's
  domain is wider than the code accepts (a defect of the declaration: failing).

And one says the law was never asked:

* ``raised``: the operator (or the code a contract runs on it) raised an
  exception on an input of its declared domain; the detail gives the
  exception's type and message and the file:line in the operator's code,
  the counterexample the input.  Failing on a claimed and on an expected-violated row
  alike (a crash reproduces no violation), and reported apart from a
  violation of the law as the outcome ``operator raised``.
"""
from __future__ import annotations

import dataclasses
import enum
import os
import traceback
from typing import Any

from .evidence import FUZZ_KEYS, PROOF_KEYS, FuzzEvidence, ProofEvidence, Raised


class _Named(str, enum.Enum):
    """A ``str``-valued enum: equal to, hashed like, formatted and JSON-encoded as its value, so a report
    written with these members reads exactly as one written with the bare strings (and reads back)."""

    __str__ = str.__str__
    __format__ = str.__format__


class Status(_Named):
    """What a tier observed for one cell (see the module docstring)."""

    HOLDS = "holds"
    PROVED = "proved"
    VIOLATED = "violated"
    REFUTED = "refuted"
    UNKNOWN = "unknown"
    NOT_RUNNABLE = "not_runnable"
    # The contract says why this cell is never judged (e.g. the eager float32 differential cell, whose float32
    # run *is* the error probe).  Unlike NOT_RUNNABLE, no machine would run it.
    NOT_APPLICABLE_BY_DESIGN = "not_applicable"
    SAMPLED = "holds_for_sampled_weights"
    VACUOUS = "vacuous"
    NOT_TRACEABLE = "not_traceable"
    TRACE_DIFFERS = "trace_differs"
    DOMAIN_MISMATCH = "domain_mismatch"
    RAISED = "raised"               # the operator raised an exception on a drawn input (not a law's verdict)


class Outcome(_Named):
    """A cell's observation judged against the operator's declaration (:func:`outcome`)."""

    # Each member is (its written value, its severity): how bad it is, 0 (proved) the best.  The gate compares
    # a cell's baseline and current outcomes by it and :meth:`Outcome.worst` picks by it; equal ranks are
    # equally bad.
    HOLDS = "holds", 1
    PROVED = "proved", 0
    SAMPLED = "holds for sampled weights", 1
    EXPECTED = "expected violation reproduced", 1
    UNEXPECTED = "UNEXPECTED violation", 5
    NOT_REPRODUCED = "expected violation NOT reproduced", 4
    UNKNOWN = "unknown", 2
    NOT_RUNNABLE = "not runnable here", 3
    NOT_APPLICABLE_BY_DESIGN = "not applicable by design", 3
    VACUOUS = "vacuous", 2
    NOT_TRACEABLE = "not symbolically traceable", 3
    TRACE_DIFFERS = "trace differs from eager", 2
    DOMAIN_MISMATCH = "domain mismatch", 4
    RAISED = "operator raised", 5
    # The operator neither claims nor expects to violate the contract (or no verdict): no cell to judge.
    UNDECLARED = "not applicable", 3

    def __new__(cls, value: str, severity: int):
        member = str.__new__(cls, value)
        member._value_ = value
        member.severity = severity
        return member

    @classmethod
    def worst(cls, *outcomes) -> "Outcome":
        """The most severe of ``outcomes`` (the first of equally severe ones); bare strings are read as outcomes.

        >>> Outcome.worst("holds", Outcome.UNEXPECTED, Outcome.PROVED)
        <Outcome.UNEXPECTED: 'UNEXPECTED violation'>
        """
        if not outcomes:
            raise ValueError("Outcome.worst: no outcome given")
        return max((cls(o) for o in outcomes), key=lambda o: o.severity)


class Tier(_Named):
    """The tier a run was made by, as its report's ``meta.tier`` names it."""

    FUZZ = "fuzz"               # the fuzz tier on the eager reference
    KERNEL = "kernel"           # the fuzz tier on another backend (a kernel plug-in)
    SYMBOLIC = "symbolic"       # the symbolic tier (z3 over the reals)

    @classmethod
    def of(cls, meta: dict) -> "Tier":
        """The tier of a run's meta (a report written before the field existed: fuzz)."""
        return cls(meta.get("tier") or cls.FUZZ)


FAILING = frozenset({Outcome.UNEXPECTED, Outcome.NOT_REPRODUCED, Outcome.DOMAIN_MISMATCH, Outcome.RAISED})
# Outcomes that decided nothing either way (reported, never green, never failing).
UNDECIDED = frozenset({Outcome.UNKNOWN, Outcome.VACUOUS, Outcome.TRACE_DIFFERS})
NOT_RUN = frozenset({Outcome.NOT_RUNNABLE, Outcome.NOT_TRACEABLE})
_NOT_RUN_STATUS = {Status.NOT_RUNNABLE: Outcome.NOT_RUNNABLE, Status.NOT_TRACEABLE: Outcome.NOT_TRACEABLE}
# Statuses whose outcome is the same whatever was declared (the observation decided nothing about the claim,
# or it failed the run itself): :func:`outcome` reads them here before the declaration.
_OUTCOME_OF_STATUS = {
    **{s: Outcome[s.name] for s in (Status.UNKNOWN, Status.VACUOUS, Status.TRACE_DIFFERS, Status.DOMAIN_MISMATCH,
                                    Status.RAISED, Status.NOT_APPLICABLE_BY_DESIGN)},
    **_NOT_RUN_STATUS,
}

# Typed fields that steer the tiers; in the report they stay where they always were, in ``extra``
# under these keys (written only when set), so the JSON schema is unchanged (docs/report-schema.md).
_FLAGS = ("mismatch", "step", "inconclusive")
_TEXTS = ("params", "witness")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What one check observed; ``discrepancy <= bound`` for a law that holds.

    Frozen: a tier that adds to a verdict builds a new one (``dataclasses.replace``).  ``detail`` is the
    short sentence of what was measured; what the tier did to reach it is ``evidence``
    (:class:`~.evidence.FuzzEvidence`, :class:`~.evidence.ProofEvidence`), an exception the operator raised is ``raised``
    (:class:`~.evidence.Raised`).  The fields the tiers branch on are typed, the law's own measurements
    (ratios, set-aside counts, ...) live in ``extra``:

    * ``mismatch``: a symbolic refutation that did not replay on the eager code (a failure of the suite);
    * ``step``: only an induction step of a host proof is refuted (no counterexample of the host by itself);
    * ``inconclusive``: the example decided nothing (e.g. every row set aside at a threshold);
    * ``params``: how the symbolic tier made the parameters ("symbols", or the sampled-weights wording);
    * ``witness``: how a host input reaching a refuted induction step was found.
    """

    status: Status
    discrepancy: float = 0.0
    bound: float = 0.0
    detail: str = ""
    counterexample: dict | None = None
    examples: int = 0
    seconds: float = 0.0
    tier: str = "fuzz"
    dtype: str | None = None
    replay: str | None = None
    extra: dict = dataclasses.field(default_factory=dict)
    mismatch: bool = False
    step: bool = False
    inconclusive: bool = False
    params: str | None = None
    witness: str | None = None
    evidence: FuzzEvidence | ProofEvidence | None = None
    raised: Raised | None = None

    def __post_init__(self):
        steering = sorted(set(self.extra) & set(_FLAGS + _TEXTS + FUZZ_KEYS + PROOF_KEYS + ("raised",)))
        if steering:
            raise ValueError(f"extra: {steering} are typed fields of Verdict (pass them as keywords, the search's "
                             "record as evidence=FuzzEvidence, a proof's as evidence=ProofEvidence, an exception as "
                             "raised=Raised), not extra keys")
        if self.status not in tuple(Status):
            raise ValueError(f"status: expected one of {[s.value for s in Status]}, got {self.status!r}")
        object.__setattr__(self, "status", Status(self.status))   # normalising a field of a frozen record

    @property
    def violated(self) -> bool:
        """The example failed: the law was violated / refuted, or the operator raised (a search stops at both)."""
        return self.status in (Status.VIOLATED, Status.REFUTED, Status.RAISED)

    @property
    def ratio(self) -> float:
        """discrepancy / bound (0 when both are 0; inf for a positive discrepancy on a zero bound)."""
        if self.discrepancy == 0:
            return 0.0
        return float("inf") if self.bound == 0 else self.discrepancy / self.bound

    @property
    def written_detail(self) -> str:
        """``detail`` as the report writes it: with the search's notes (:meth:`FuzzEvidence.written_detail`)."""
        return self.detail if self.evidence is None else self.evidence.written_detail(self.detail)

    def to_json(self) -> dict[str, Any]:
        """The report's verdict (docs/report-schema.md): the typed evidence goes back under its ``extra`` keys,
        the search's notes after the detail."""
        d = dataclasses.asdict(dataclasses.replace(self, extra=dict(self.extra), evidence=None, raised=None))
        del d["evidence"], d["raised"]
        d["detail"] = self.written_detail
        extra = d["extra"]
        if self.raised is not None:
            extra["raised"] = self.raised.to_json()
        if self.evidence is not None:
            extra.update(self.evidence.to_extra())
        for k in _TEXTS:
            value = d.pop(k)
            if value is not None:
                extra[k] = value
        for k in _FLAGS:
            if d.pop(k):
                extra[k] = True
        d["status"] = self.status.value
        for k in ("discrepancy", "bound"):
            d[k] = _finite(d[k])
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Verdict":
        """The inverse of :meth:`to_json` (reports of every schema version: the typed fields come out of ``extra``)."""
        kw = dict(d)
        extra = dict(kw.get("extra") or {})
        if "raised" in extra:
            kw["raised"] = Raised.from_json(extra.pop("raised"))
        if any(k in extra for k in PROOF_KEYS):         # the keys say which tier recorded them
            kw["evidence"], extra = ProofEvidence.read(extra)
        else:
            kw["evidence"], kw["detail"], extra = FuzzEvidence.read(kw.get("detail", ""), extra)
        for k in _FLAGS:
            kw[k] = bool(extra.pop(k, False))
        for k in _TEXTS:
            kw[k] = extra.pop(k, None)
        kw["extra"] = extra
        for k in ("discrepancy", "bound"):
            if isinstance(kw.get(k), str):
                kw[k] = float(kw[k])
        return cls(**kw)


def _finite(v):
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def holds(discrepancy=0.0, bound=0.0, detail="", **kw) -> Verdict:
    return Verdict(Status.HOLDS, float(discrepancy), float(bound), detail, **kw)


def violated(discrepancy, bound=0.0, detail="", **kw) -> Verdict:
    return Verdict(Status.VIOLATED, float(discrepancy), float(bound), detail, **kw)


def raised(err: BaseException, source: str | None = None) -> Verdict:
    """The verdict on an example where running the operator raised ``err``: type, message and the innermost
    line of its traceback in ``source`` (the operator's file), else the innermost line anywhere (said so)."""
    frames = traceback.extract_tb(err.__traceback__)
    own = [f for f in frames if source and _same_file(f.filename, source)]
    frame = (own or frames or [None])[-1]
    where = f"{frame.filename}:{frame.lineno}" if frame is not None else "?"
    message = (str(err).splitlines() or [""])[0][:300]
    note = "" if own or not source else " (no frame in the operator's own file)"
    return Verdict(Status.RAISED, float("nan"), 0.0, f"operator raised {type(err).__name__}: {message} at {where}{note}",
                   raised=Raised(type(err).__name__, message, where))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def judge(discrepancy, bound, detail="", **kw) -> Verdict:
    """holds iff discrepancy <= bound (a NaN discrepancy is a violation)."""
    d = float(discrepancy)
    ok = d == d and d <= float(bound)
    return Verdict(Status.HOLDS if ok else Status.VIOLATED, d, float(bound), detail, **kw)


def outcome(declared: str | None, verdict: Verdict | None) -> Outcome:
    """Judge an observation against 'claims' / 'violates' / None."""
    if declared is None or verdict is None:
        return Outcome.UNDECLARED
    if verdict.status in _OUTCOME_OF_STATUS:
        return _OUTCOME_OF_STATUS[verdict.status]
    if declared == "claims":
        if verdict.violated:
            return Outcome.UNEXPECTED
        # a sampled-weights proof is evidence like "holds": a pass, never "proved"
        return {Status.PROVED: Outcome.PROVED, Status.SAMPLED: Outcome.SAMPLED}.get(verdict.status, Outcome.HOLDS)
    return Outcome.EXPECTED if verdict.violated else Outcome.NOT_REPRODUCED
