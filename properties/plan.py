"""Plan the cells of a run: operator x contract x backend x dtype.

A row is one (operator, contract) pair of the matrix; it holds one cell per
dtype.  Its outcome aggregates the cells: a claimed law must hold in every
dtype; an expected violation is reproduced when some dtype shows it (a law
broken in the reals can hide under low-precision rounding).
"""
from __future__ import annotations

import dataclasses

from . import verdict as V
from .case import DTYPES
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
            return V.NOT_APPLICABLE
        if all(v.status == V.BY_DESIGN for v in verdicts):
            return V.OUT_BY_DESIGN
        verdicts = [v for v in verdicts if v.status != V.BY_DESIGN]    # by design: not part of the judgement
        if self.declared == "claims":
            outs = [V.outcome("claims", v) for v in verdicts]
            for bad in (V.BAD_UNEXPECTED, V.OUT_UNKNOWN, V.OUT_VACUOUS):
                if bad in outs:
                    return bad
            runnable = [o for o in outs if o not in V.NOT_RUN]
            if not runnable:
                return V.OUT_NOT_TRACEABLE if V.OUT_NOT_TRACEABLE in outs else V.OUT_NOT_RUNNABLE
            for same in (V.OK_PROVED, V.OK_SAMPLED):       # a mix of evidence reads "holds"
                if all(o == same for o in runnable):
                    return same
            return V.OK_HOLDS
        if any(v.violated for v in verdicts):
            return V.OK_EXPECTED
        if all(v.status in (V.NOT_RUNNABLE, V.NOT_TRACEABLE) for v in verdicts):
            return V.OUT_NOT_RUNNABLE
        return V.BAD_NOT_REPRODUCED

    @property
    def failing(self) -> bool:
        return self.outcome in V.FAILING


def plan(registry, *, operators=None, contracts=None, dtypes=None, backend="eager") -> list[Row]:
    """Every declared (operator, contract) row, filtered; one cell per applicable dtype.

    A kernel backend (``backend != "eager"``) plans its own rows: see ``tokenlaw.kernels.backend``.
    """
    if backend != "eager":
        from tokenlaw.kernels.backend import plan_rows

        return plan_rows(registry, operators=operators, contracts=contracts, dtypes=dtypes, backend=backend)
    rows = []
    for op in registry:
        if operators and op.name not in operators:
            continue
        universal = [n for n, c in CONTRACTS.items() if c.universal and op.declared(n) is None]
        for name in list(op.claims) + list(op.violates) + universal:
            if contracts and name not in contracts:
                continue
            c = CONTRACTS[name]
            cells = [Cell(op.name, name, backend, dt) for dt in c.dtypes
                     if dt in op.domain.dtypes and (not dtypes or dt in dtypes)]
            declared = op.declared(name) or "claims"
            reason = {**op.claims, **op.violates}.get(name) or f"universal contract: {c.law}"
            rows.append(Row(op.name, name, declared, reason, cells))
    return rows


def validate_dtypes(names):
    from tokenlaw.operators.errors import InvalidArgument

    for n in names or ():
        if n not in DTYPES:
            raise InvalidArgument(f"dtype: expected one of {sorted(DTYPES)}, got {n!r}")
    return names
