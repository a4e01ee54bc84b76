"""What a verdict rests on, typed: the fuzz tier's search record and the exception an operator raised.

A :class:`~.verdict.Verdict`'s ``detail`` is a short sentence (the law's own
wording of what it measured, or why nothing was judged).  What the search did
to reach it lives here:

* :class:`FuzzEvidence`: the fuzz tier's record of one cell's search -- the
  shape ranges searched, the examples drawn per band, the regimes visited and
  their accounting, the declared limit, the rows and examples set aside, how
  many examples judged something, the digest of the draws, where the first
  violation was found, whether it came from the example database -- and the
  notes the engine words from it;
* :class:`ProofEvidence`: the symbolic tier's record of one row -- the
  solver, the shapes and statement it was asked, the premises, the queries,
  the host check, and the check of its answer against the eager code;
* :class:`Raised`: the type, message and file:line of an exception the
  operator raised on a drawn input.

The tiers produce these and the reports read them.  Only the JSON edge
(:meth:`~.verdict.Verdict.to_json` / ``from_json``) knows that the report's
schema (``docs/report-schema.md``, unchanged) keeps them in the verdict's
``extra`` under their historical keys (in the order they were recorded), and
the engine's notes appended to the ``detail`` in brackets: :meth:`FuzzEvidence.written_detail` writes that form,
:meth:`FuzzEvidence.read` reads it back.
"""
from __future__ import annotations

import dataclasses

# The fuzz evidence in a written verdict's ``extra``, in the order the engine has always written it
# (the reports are byte-identical across this typing): the coverage keys (written together, or not at all),
# then the keys written only when set.
COVERAGE_KEYS = ("searched", "drawn", "missed_bands", "missed_lengths", "regime_accounting", "trivial_examples",
                 "unjudged_regimes", "limit", "outside_limit", "regimes", "unvisited_regimes", "set_aside_rows",
                 "inconclusive_examples")
FUZZ_KEYS = ("nondeterministic", *COVERAGE_KEYS, "set_aside_by_regime", "judged_examples", "found_at", "shrink",
             "from_database", "first_violation", "draws", "judgement_probes", "worst")

# The two notes a search's verdict ends with when it says how the counterexample was reached.
REPLAYED = " [replayed from the example database]"
STOPPED = " [the search stopped at its first violation, unshrunk]"


@dataclasses.dataclass(frozen=True)
class FuzzEvidence:
    """The fuzz tier's record of one cell's search (see :func:`tokenlaw.fuzz.engine.run_cell`).

    The search's coverage (every full search records it, a search stopped at its first violation does not;
    a field an older report lacks is None): ``searched`` ({axis: [min, max]}), ``drawn`` ({axis: {band: examples}}), the reachable
    ``missed_bands`` / ``missed_lengths`` never drawn, ``accounting`` ({regime: Account fields}), ``regimes``
    ({regime: examples visiting it}), ``unvisited`` and ``unjudged`` regimes, ``limit`` (the declared limit's
    record, or None), and the counts: ``trivial`` and ``inconclusive`` examples, ``outside`` the limit, and
    ``set_aside`` rows.  ``notes``: the engine's wording of them (what the report shows after the detail).

    Then, each None / False when the path did not set it: ``set_aside_by_regime`` ({regime: [set aside,
    rows]}), ``judged`` (examples that judged a value), ``found_at`` (the example the first violation was found
    at), ``shrink`` (the shapes the shrinking went through), ``from_database`` (a stored counterexample,
    replayed: no search ran), ``first_violation`` (the search stopped there, unshrunk), ``draws`` (a digest
    of every example drawn), ``probes`` (the extra judgements of the determinism probe and the shrinking),
    ``worst`` (a digest of the example the reported bound is from) and ``nondeterministic`` (the two
    disagreeing judgements of one input).
    """

    searched: dict | None = None
    drawn: dict | None = None
    missed_bands: list | None = None
    missed_lengths: list | None = None
    accounting: dict | None = None
    trivial: int | None = None
    unjudged: list | None = None
    limit: dict | None = None
    outside: int = 0
    regimes: dict | None = None
    unvisited: list | None = None
    set_aside: int | None = None
    inconclusive: int | None = None
    notes: str = ""
    set_aside_by_regime: dict | None = None
    judged: int | None = None
    found_at: int | None = None
    shrink: dict | None = None
    from_database: bool = False
    first_violation: bool = False
    draws: str | None = None
    probes: int | None = None
    worst: str | None = None
    nondeterministic: dict | None = None

    @property
    def covered(self) -> bool:
        """The search's coverage was recorded (every full search; not one stopped at its first violation)."""
        return self.searched is not None

    # -- the JSON edge ------------------------------------------------------------------------------
    def to_extra(self) -> dict:
        """The report's ``extra`` keys of this evidence (:data:`FUZZ_KEYS`, in their written order)."""
        out = {}
        if self.nondeterministic is not None:
            out["nondeterministic"] = self.nondeterministic
        for key, value in (("searched", self.searched), ("drawn", self.drawn), ("missed_bands", self.missed_bands),
                           ("missed_lengths", self.missed_lengths), ("regime_accounting", self.accounting),
                           ("trivial_examples", self.trivial), ("unjudged_regimes", self.unjudged),
                           ("limit", self.limit), ("outside_limit", self.outside or None),
                           ("regimes", self.regimes), ("unvisited_regimes", self.unvisited),
                           ("set_aside_rows", self.set_aside), ("inconclusive_examples", self.inconclusive)):
            if value is not None:
                out[key] = value
        for key, value in (("set_aside_by_regime", self.set_aside_by_regime), ("judged_examples", self.judged),
                           ("found_at", self.found_at), ("shrink", self.shrink)):
            if value is not None:
                out[key] = value
        if self.from_database:
            out["from_database"] = True
        if self.first_violation:
            out["first_violation"] = True
        for key, value in (("draws", self.draws), ("judgement_probes", self.probes), ("worst", self.worst)):
            if value is not None:
                out[key] = value
        return out

    def written_detail(self, detail: str) -> str:
        """``detail`` as the report writes it: the notes appended in brackets."""
        return (detail + (f" [{self.notes}]" if self.notes else "") + (REPLAYED if self.from_database else "")
                + (STOPPED if self.first_violation else ""))

    @classmethod
    def read(cls, detail: str, extra: dict) -> tuple["FuzzEvidence | None", str, dict]:
        """(evidence, short detail, the extra keys that are not evidence) of a written verdict; evidence None
        when the verdict holds none (another tier's, or a verdict made before any search ran)."""
        if not any(k in extra for k in FUZZ_KEYS):
            return None, detail, extra
        rest = {k: v for k, v in extra.items() if k not in FUZZ_KEYS}
        e = extra.get
        first_violation, from_database = bool(e("first_violation")), bool(e("from_database"))
        for flag, tail in ((first_violation, STOPPED), (from_database, REPLAYED)):
            if flag and detail.endswith(tail):
                detail = detail[:-len(tail)]
        notes = ""
        if "searched" in extra and detail.endswith("]"):
            start = _notes_start(detail, extra)
            if start >= 0:
                detail, notes = detail[:start], detail[start + 2:-1]
        evidence = cls(searched=e("searched"), drawn=e("drawn"), missed_bands=e("missed_bands"),
                       missed_lengths=e("missed_lengths"), accounting=e("regime_accounting"),
                       trivial=e("trivial_examples"), unjudged=e("unjudged_regimes"), limit=e("limit"),
                       outside=e("outside_limit", 0), regimes=e("regimes"), unvisited=e("unvisited_regimes"),
                       set_aside=e("set_aside_rows"), inconclusive=e("inconclusive_examples"), notes=notes,
                       set_aside_by_regime=e("set_aside_by_regime"), judged=e("judged_examples"),
                       found_at=e("found_at"), shrink=e("shrink"), from_database=from_database,
                       first_violation=first_violation, draws=e("draws"), probes=e("judgement_probes"),
                       worst=e("worst"), nondeterministic=e("nondeterministic"))
        return evidence, detail, rest


def _notes_start(detail: str, extra: dict) -> int:
    """Where the engine's bracketed notes begin in a written detail (-1: none found).  The first note is
    known from the evidence (the engine writes them in a fixed order), so a bracket inside the law's own
    sentence or inside a later note is never taken for it."""
    for key, first in (("searched", " [searched "), ("drawn", " [drawn "), ("missed_bands", " [NEVER drawn: "),
                       ("missed_lengths", " [NEVER drawn: "), ("limit", " [declared limit "),
                       ("regimes", " [regimes ")):
        if extra.get(key):
            return detail.find(first)
    return detail.rfind(" [")


@dataclasses.dataclass(frozen=True)
class Raised:
    """An exception the operator raised on a drawn input: its type, first message line and where
    (``file:line``, the innermost frame in the operator's own file when there is one)."""

    type: str
    message: str
    where: str

    def to_json(self) -> dict:
        return {"type": self.type, "message": self.message, "where": self.where}

    @classmethod
    def from_json(cls, d: dict) -> "Raised":
        return cls(d.get("type", ""), d.get("message", ""), d.get("where", "?"))


# The symbolic tier's evidence in a written verdict's ``extra``: the solver and what it was asked, then what
# checked its answer against the eager code.
PROOF_KEYS = ("solver", "shapes", "statement", "premises", "argument", "queries", "rejected", "host_check",
              "trace_check", "where", "solver_said", "point", "construct")


@dataclasses.dataclass(frozen=True)
class ProofEvidence:
    """The symbolic tier's record of one row (see :mod:`tokenlaw.symbolic.prover`), each field None when
    that path did not set it.

    ``solver`` (name and version), ``shapes`` the statement was traced at, the ``statement`` proved or refuted,
    its ``premises`` (the declared domain as z3 constraints), the host ``argument`` (how a composite's rows
    follow from its blocks), the enumerated ``queries`` asked; ``rejected`` (a counterexample the eager code's
    validation refused: argument, value, error); the ``host_check`` of a host's declarations; the
    ``trace_check`` of a proof against the eager code and, where it failed, ``where`` (file:line), what the
    solver had said (``solver_said``) and the ``point`` the values differ at; for code the namespaces cannot
    trace, ``where`` and the ``construct``.

    ``order``: the fields in the order the tier recorded them (:meth:`add`), which is the order the report
    writes them in.
    """

    solver: str | None = None
    shapes: dict | None = None
    statement: str | None = None
    premises: list | None = None
    argument: str | None = None
    queries: int | None = None
    rejected: dict | None = None
    host_check: str | None = None
    trace_check: str | None = None
    where: str | None = None
    solver_said: str | None = None
    point: dict | None = None
    construct: str | None = None
    order: tuple = ()

    def add(self, **fields) -> "ProofEvidence":
        """This evidence with ``fields`` set (a field set again keeps its place in :attr:`order`)."""
        bad = sorted(set(fields) - set(PROOF_KEYS))
        if bad:
            raise ValueError(f"ProofEvidence: no field {bad}; expected some of {list(PROOF_KEYS)}")
        return dataclasses.replace(self, **fields, order=self.order + tuple(k for k in fields if k not in self.order))

    def without(self, name: str) -> "ProofEvidence":
        """This evidence with ``name`` unset."""
        return dataclasses.replace(self, **{name: None}, order=tuple(k for k in self.order if k != name))

    def written_detail(self, detail: str) -> str:
        """``detail`` as the report writes it (the symbolic tier's detail carries no notes)."""
        return detail

    def to_extra(self) -> dict:
        """The report's ``extra`` keys of this evidence (:data:`PROOF_KEYS`), in the order recorded."""
        return {k: getattr(self, k) for k in self.order}

    @classmethod
    def read(cls, extra: dict) -> tuple["ProofEvidence | None", dict]:
        """(evidence, the extra keys that are not evidence) of a written symbolic verdict."""
        keys = tuple(k for k in extra if k in PROOF_KEYS)
        if not keys:
            return None, extra
        return (cls(**{k: extra[k] for k in keys}, order=keys),
                {k: v for k, v in extra.items() if k not in PROOF_KEYS})
