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
import os
import traceback
from typing import Any

HOLDS, PROVED = "holds", "proved"
VIOLATED, REFUTED = "violated", "refuted"
UNKNOWN, NOT_RUNNABLE = "unknown", "not_runnable"
# Not applicable by design: the contract says why this cell is never judged (e.g. the eager float32
# differential cell, whose float32 run *is* the error probe).  Unlike NOT_RUNNABLE, no machine would run it.
BY_DESIGN = "not_applicable"
SAMPLED, VACUOUS, NOT_TRACEABLE = "holds_for_sampled_weights", "vacuous", "not_traceable"
TRACE_DIFFERS, DOMAIN_MISMATCH = "trace_differs", "domain_mismatch"
RAISED = "raised"
STATUSES = (HOLDS, PROVED, VIOLATED, REFUTED, UNKNOWN, NOT_RUNNABLE, BY_DESIGN, SAMPLED, VACUOUS, NOT_TRACEABLE,
            TRACE_DIFFERS, DOMAIN_MISMATCH, RAISED)

# Outcomes of a cell: the observation judged against the declaration.
OK_HOLDS = "holds"
OK_PROVED = "proved"
OK_SAMPLED = "holds for sampled weights"
OK_EXPECTED = "expected violation reproduced"
BAD_UNEXPECTED = "UNEXPECTED violation"
BAD_NOT_REPRODUCED = "expected violation NOT reproduced"
OUT_UNKNOWN = "unknown"
OUT_NOT_RUNNABLE = "not runnable here"
OUT_BY_DESIGN = "not applicable by design"
OUT_VACUOUS = "vacuous"
OUT_NOT_TRACEABLE = "not symbolically traceable"
OUT_TRACE_DIFFERS = "trace differs from eager"
BAD_DOMAIN_MISMATCH = "domain mismatch"
BAD_RAISED = "operator raised"
NOT_APPLICABLE = "not applicable"
FAILING = frozenset({BAD_UNEXPECTED, BAD_NOT_REPRODUCED, BAD_DOMAIN_MISMATCH, BAD_RAISED})
# Outcomes that decided nothing either way (reported, never green, never failing).
UNDECIDED = frozenset({OUT_UNKNOWN, OUT_VACUOUS, OUT_TRACE_DIFFERS})
NOT_RUN = frozenset({OUT_NOT_RUNNABLE, OUT_NOT_TRACEABLE})
_NOT_RUN_STATUS = {NOT_RUNNABLE: OUT_NOT_RUNNABLE, NOT_TRACEABLE: OUT_NOT_TRACEABLE}


@dataclasses.dataclass
class Verdict:
    """What one check observed; ``discrepancy <= bound`` for a law that holds."""

    status: str
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

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status: expected one of {STATUSES}, got {self.status!r}")

    @property
    def violated(self) -> bool:
        """The example failed: the law was violated / refuted, or the operator raised (a search stops at both)."""
        return self.status in (VIOLATED, REFUTED, RAISED)

    @property
    def ratio(self) -> float:
        """discrepancy / bound (0 when both are 0; inf for a positive discrepancy on a zero bound)."""
        if self.discrepancy == 0:
            return 0.0
        return float("inf") if self.bound == 0 else self.discrepancy / self.bound

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for k in ("discrepancy", "bound"):
            d[k] = _finite(d[k])
        return d


def _finite(v):
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def holds(discrepancy=0.0, bound=0.0, detail="", **kw) -> Verdict:
    return Verdict(HOLDS, float(discrepancy), float(bound), detail, **kw)


def violated(discrepancy, bound=0.0, detail="", **kw) -> Verdict:
    return Verdict(VIOLATED, float(discrepancy), float(bound), detail, **kw)


def raised(err: BaseException, source: str | None = None) -> Verdict:
    """The verdict on an example where running the operator raised ``err``: type, message and the innermost
    line of its traceback in ``source`` (the operator's file), else the innermost line anywhere (said so)."""
    frames = traceback.extract_tb(err.__traceback__)
    own = [f for f in frames if source and _same_file(f.filename, source)]
    frame = (own or frames or [None])[-1]
    where = f"{frame.filename}:{frame.lineno}" if frame is not None else "?"
    message = (str(err).splitlines() or [""])[0][:300]
    note = "" if own or not source else " (no frame in the operator's own file)"
    return Verdict(RAISED, float("nan"), 0.0, f"operator raised {type(err).__name__}: {message} at {where}{note}",
                   extra={"raised": {"type": type(err).__name__, "message": message, "where": where}})


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def judge(discrepancy, bound, detail="", **kw) -> Verdict:
    """holds iff discrepancy <= bound (a NaN discrepancy is a violation)."""
    d = float(discrepancy)
    ok = d == d and d <= float(bound)
    return Verdict(HOLDS if ok else VIOLATED, d, float(bound), detail, **kw)


def outcome(declared: str | None, verdict: Verdict | None) -> str:
    """Judge an observation against 'claims' / 'violates' / None."""
    if declared is None or verdict is None:
        return NOT_APPLICABLE
    if verdict.status == UNKNOWN:
        return OUT_UNKNOWN
    if verdict.status == VACUOUS:
        return OUT_VACUOUS
    if verdict.status == TRACE_DIFFERS:
        return OUT_TRACE_DIFFERS
    if verdict.status == DOMAIN_MISMATCH:
        return BAD_DOMAIN_MISMATCH
    if verdict.status == RAISED:
        return BAD_RAISED
    if verdict.status == BY_DESIGN:
        return OUT_BY_DESIGN
    if verdict.status in _NOT_RUN_STATUS:
        return _NOT_RUN_STATUS[verdict.status]
    if declared == "claims":
        if verdict.violated:
            return BAD_UNEXPECTED
        # a sampled-weights proof is evidence like "holds": a pass, never "proved"
        return {PROVED: OK_PROVED, SAMPLED: OK_SAMPLED}.get(verdict.status, OK_HOLDS)
    return OK_EXPECTED if verdict.violated else BAD_NOT_REPRODUCED
