"""Plan the cells of a run: operator x contract x backend x dtype.

A row is one (operator, contract) pair of the matrix; it holds one cell per
dtype.  Its outcome aggregates the cells: a claimed law must hold in every
dtype; an expected violation is reproduced when some dtype shows it (a law
broken in the reals can hide under low-precision rounding).

Both tiers fill the same rows: the fuzz tier a verdict per planned dtype
cell, the symbolic tier one cell per row (backend "symbolic", dtype "real":
:func:`proved`), and :attr:`Row.outcome` judges either, once.
"""
from __future__ import annotations

import dataclasses

from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.operators.errors import InvalidArgument

from . import backends
from . import verdict as V
from .catalogue import CONTRACTS


@dataclasses.dataclass
class Cell:
    operator: str
    contract: str
    backend: str
    dtype: str
    verdict: V.Verdict | None = None

    @property
    def id(self) -> str:
        return f"{self.operator}-{self.contract}-{self.backend}-{self.dtype}"


@dataclasses.dataclass
class Row:
    operator: str
    contract: str
    declared: str | None          # "claims" / "violates" / None
    reason: str
    cells: list

    @property
    def id(self) -> str:
        return f"{self.operator}-{self.contract}"

    @property
    def outcome(self) -> str:
        verdicts = [c.verdict for c in self.cells if c.verdict is not None]
        if self.declared is None or not verdicts:
            return V.Outcome.UNDECLARED
        if all(v.status == V.Status.NOT_APPLICABLE_BY_DESIGN for v in verdicts):
            return V.Outcome.NOT_APPLICABLE_BY_DESIGN
        # by design: not part of the judgement
        verdicts = [v for v in verdicts if v.status != V.Status.NOT_APPLICABLE_BY_DESIGN]
        if self.declared == "claims":
            outs = [V.outcome("claims", v) for v in verdicts]
            for bad in (V.Outcome.RAISED, V.Outcome.UNEXPECTED, V.Outcome.DOMAIN_MISMATCH, V.Outcome.TRACE_DIFFERS, V.Outcome.UNKNOWN, V.Outcome.VACUOUS):
                if bad in outs:
                    return bad
            runnable = [o for o in outs if o not in V.NOT_RUN]
            if not runnable:
                return V.Outcome.NOT_TRACEABLE if V.Outcome.NOT_TRACEABLE in outs else V.Outcome.NOT_RUNNABLE
            for same in (V.Outcome.PROVED, V.Outcome.SAMPLED):       # a mix of evidence reads "holds"
                if all(o == same for o in runnable):
                    return same
            return V.Outcome.HOLDS
        if any(v.status == V.Status.RAISED for v in verdicts):
            return V.Outcome.RAISED          # a crash reproduces no violation
        if any(v.violated for v in verdicts):
            return V.Outcome.EXPECTED
        if all(c.backend == SYMBOLIC for c in self.cells):
            # a proof that refuted nothing says why itself: undecided (unknown, vacuous, trace differs) is not
            # "NOT reproduced", and only a proof of the law is
            return V.Outcome.worst(*(V.outcome(self.declared, v) for v in verdicts))
        if all(v.status in (V.Status.NOT_RUNNABLE, V.Status.NOT_TRACEABLE) for v in verdicts):
            return V.Outcome.NOT_RUNNABLE
        return V.Outcome.NOT_REPRODUCED

    @property
    def mismatched(self) -> bool:
        """A symbolic refutation that did not replay on the eager code: a failure of the suite, whatever the
        declaration."""
        return any(c.verdict is not None and c.verdict.mismatch for c in self.cells)

    @property
    def failing(self) -> bool:
        return self.outcome in V.FAILING


# The backend name of the symbolic tier's cells (dtype "real"): z3 over the reals, not a backend of properties.backends.
SYMBOLIC = V.Tier.SYMBOLIC.value
REAL = "real"


def proved(planned, results) -> list:
    """The planned rows filled by the symbolic tier: each row's one cell (backend "symbolic", dtype "real")
    holds its verdict from ``results`` ([(operator, contract, Verdict)]; None for a row not proved)."""
    by = {(op, c): v for op, c, v in results}
    return [Row(r.operator, r.contract, r.declared, r.reason,
                [Cell(r.operator, r.contract, SYMBOLIC, REAL, by.get((r.operator, r.contract)))]) for r in planned]


class Plan(list):
    """The planned rows, plus ``left_out``: {operator: why} for the operators the backend does not implement."""

    def __init__(self, rows=(), left_out=None):
        super().__init__(rows)
        self.left_out = dict(left_out or {})


def judged_on(contract, op, backend) -> str | None:
    """None when ``contract`` judges ``backend``'s implementation of ``op``; else why not.

    The reference backend judges every contract (its implementation is the
    operator's own code).  Another backend is judged by the contracts whose
    law is evaluated through the implementation (``@contract(evaluated=...)``).
    """
    if backend.reference:
        return None
    if contract.evaluated == "reference":
        return contract.unjudged
    if contract.evaluated == "weights" and op.weights is None:
        return "a row-normaliser law, and the operator exposes no row normaliser"
    if contract.evaluated == "autograd" and not backend.autograd:
        return f"a gradient law, and the {backend.name} backend's run is not differentiable"
    return contract.form(op) if contract.form is not None else None


def _dtypes(contract, op, backend, wanted) -> list[str]:
    """The contract's dtypes the backend computes in (else the backend's first: a structural law
    declared in a dtype the backend lacks runs once), the operator supports and the run wants."""
    names = [d for d in contract.dtypes if d in backend.dtypes] or list(backend.dtypes[:1])
    return [d for d in names if d in op.domain.dtypes and (not wanted or d in wanted)]


def _declared(op, backend, contracts) -> list[tuple]:
    """(contract, declared, reason) for every row of ``op`` on ``backend``."""
    own = backend.backend_claims.get(op.name, {})
    rows = [(n, "claims", f"{backend.name}: {own[n]}") if n in own and op.declared(n) == "violates"
            else (n, op.declared(n), {**op.claims, **op.violates}[n]) for n in list(op.claims) + list(op.violates)]
    rows += [(n, "claims", f"universal contract: {c.law}") for n, c in contracts.items()
             if c.universal and op.declared(n) is None and c.requires <= op.traits]
    if not backend.reference:
        taken = {n for n, _, _ in rows}
        rows += [(n, "claims", c.implementation) for n, c in contracts.items()
                 if c.implementation and n not in taken]
        rows += [(n, "claims", why) for n, why in op.implementation_claims.items() if n not in taken]
    return rows


def contracts_of(registry):
    """The contracts ``registry`` was validated against (a user's own included: ``Registry.contracts``);
    a registry built bare, without any, is read against the catalogue."""
    return getattr(registry, "contracts", None) or CONTRACTS


def plan(registry, *, operators=None, contracts=None, dtypes=None, backend=backends.EAGER.name) -> Plan:
    """Every (operator, contract) row of a run on ``backend`` (a name), filtered; one cell per dtype.

    The rows of an operator are its declared contracts and the universal
    ones whose required traits it has (``unmasked``: masked operators only);
    on a backend other than the reference also the implementation
    laws (``@contract(implementation=...)``) and the operator's own
    ``implementation_claims``.  A row whose law the backend's implementation
    cannot answer (:func:`judged_on`) is kept, with the reason and no cells.
    Operators the backend does not implement have no rows: ``Plan.left_out``
    says why.  An unavailable backend is refused (InvalidArgument).
    """
    impl = backends.require(backend)
    catalogue = contracts_of(registry)
    rows, left_out = [], {}
    for op in registry:
        if operators and op.name not in operators:
            continue
        why = impl.implements(op)
        if why:
            left_out[op.name] = why
            continue
        for name, declared, reason in _declared(op, impl, catalogue):
            if contracts and name not in contracts:
                continue
            c = catalogue[name]
            unjudged = judged_on(c, op, impl)
            if unjudged:
                rows.append(Row(op.name, name, None, f"not judged on the {impl.name} backend: {unjudged}", []))
                continue
            cells = [Cell(op.name, name, impl.name, dt) for dt in _dtypes(c, op, impl, dtypes)]
            rows.append(Row(op.name, name, declared, reason, cells))
    return Plan(rows, left_out)


def validate_dtypes(names):
    for n in names or ():
        if n not in DTYPES:
            raise InvalidArgument(f"dtype: expected one of {sorted(DTYPES)}, got {n!r}")
    return names
