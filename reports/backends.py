"""Backends side by side: where implementations of the same operators differ, as their reports judged them.

``tokenlaw report backends A.json B.json ...`` reads conformance reports of
one operator selection checked on several backends (``tokenlaw check
--backend sdpa-math``, ``--backend sdpa-flash``, ...; each report names its
backend in ``meta.backend``) and puts every cell, an (operator, contract,
dtype) triple, in one row with each backend's outcome and its discrepancy
over its bound (the cell's ratio: below 1 holds).  A row *differs* when

* the backends' outcomes differ (one holds where another fails, cannot run,
  or reproduces an expected violation), or
* each judged the cell and their ratios differ more than :data:`RATIO_APART`
  fold with the larger at least :data:`NOTICED` (one backend sits much
  closer to its bound: an accuracy difference, not a verdict),

and the differing rows come first, then the agreeing ones.  The backends'
declared conventions (a fully masked row's value, claims a backend makes
beyond the operator's, backwards it declares standard) come from each
report's ``meta.declares`` and are listed above the table: they explain most
differences in outcome.  Nothing here re-judges a cell: a row says what the
reports say, and a cell a report lacks reads "not in this report".
"""
from __future__ import annotations

import dataclasses

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V

RATIO_APART = 10.0
NOTICED = 0.1


@dataclasses.dataclass(frozen=True)
class Cell:
    outcome: str
    ratio: float | None          # discrepancy / bound where the cell was judged with a finite bound
    detail: str


@dataclasses.dataclass(frozen=True)
class Row:
    operator: str
    contract: str
    dtype: str
    cells: dict                  # backend -> Cell | None
    why: str                     # "" when the backends agree

    @property
    def differs(self) -> bool:
        return bool(self.why)


def _ratio(verdict: V.Verdict | None) -> float | None:
    if verdict is None:
        return None
    d, b = float(verdict.discrepancy), float(verdict.bound)
    if b > 0 and d == d:
        return d / b
    return 0.0 if d == 0 and b == 0 else None


def _cells(doc) -> dict:
    out = {}
    for row in doc.rows:
        for c in row.cells:
            v = c.verdict
            out[(row.operator, row.contract, c.dtype)] = Cell(V.outcome(row.declared, v), _ratio(v),
                                                              v.written_detail if v is not None else "")
    return out


def _why(cells: dict) -> str:
    present = {b: c for b, c in cells.items() if c is not None}
    outcomes = {c.outcome for c in present.values()}
    if len(present) < len(cells):
        return "not in every report"
    if len(outcomes) > 1:
        return "outcomes differ: " + ", ".join(f"{b} {c.outcome}" for b, c in present.items())
    ratios = [c.ratio for c in present.values() if c.ratio is not None]
    if len(ratios) == len(present) and max(ratios) >= NOTICED:
        low = min(ratios)
        if low == 0 or max(ratios) / low > RATIO_APART:
            return "ratios differ: " + ", ".join(f"{b} {c.ratio:.3g}" for b, c in present.items())
    return ""


def compare(documents: list) -> tuple[list, list]:
    """(backends, rows) of conformance Documents, one backend each."""
    docs = list(documents)
    if len(docs) < 2:
        raise InvalidArgument("reports: give at least two conformance reports, each of one backend")
    backends = [d.meta.backend or "eager" for d in docs]
    if len(set(backends)) < len(backends):
        raise InvalidArgument(f"reports: two reports of the same backend ({backends}); give one per backend")
    by_backend = [_cells(d) for d in docs]
    keys = sorted({k for cells in by_backend for k in cells})
    rows = []
    for key in keys:
        cells = {b: c.get(key) for b, c in zip(backends, by_backend)}
        rows.append(Row(*key, cells, _why(cells)))
    rows.sort(key=lambda r: (not r.differs, r.operator, r.contract, r.dtype))
    return backends, rows


def conventions(docs: list) -> list[str]:
    """One line per backend: what it declares beyond the operators' own laws (from ``meta.declares``)."""
    lines = []
    for d in docs:
        run = d.meta.run
        name = d.meta.backend or "eager"
        declares = run.provenance.declares if run is not None else None
        said = [f"{key} {value}" for key, value in (declares or {}).items()]
        lines.append(f"- `{name}`: " + ("; ".join(said) if said else "nothing beyond the operators' declarations"))
    return lines


def markdown(docs: list) -> str:
    backends, rows = compare(docs)
    differing = sum(r.differs for r in rows)
    out = ["# Backends side by side", "",
           f"{len(rows)} cells over {', '.join(f'`{b}`' for b in backends)}; **{differing} differ** "
           f"(outcomes, or ratios discrepancy / bound more than {RATIO_APART:g}-fold apart with one at least "
           f"{NOTICED:g}). A ratio below 1 holds.", "", "Declared by each backend:", "", *conventions(docs), "",
           "| operator | contract | dtype | " + " | ".join(f"`{b}`" for b in backends) + " | differs |",
           "|---|---|---|" + "---|" * len(backends) + "---|"]
    for r in rows:
        cols = []
        for b in backends:
            c = r.cells[b]
            cols.append("not in this report" if c is None else
                        c.outcome + ("" if c.ratio is None else f" (r {c.ratio:.3g})"))
        out.append(f"| `{r.operator}` | {r.contract} | {r.dtype} | " + " | ".join(cols) + f" | {r.why} |")
    return "\n".join(out) + "\n"
