"""The proofs report: the symbolic tier's rows as Markdown and JSON (reports/proofs.{md,json}).

Same Verdict objects and JSON schema as the conformance report
(``reports.writers.to_json``), one cell per row: backend "symbolic",
dtype "real".  The Markdown shows, per cell, the shapes, the solver, the time
and, for a refutation, the counterexample and its measured eager replay.
"""
from __future__ import annotations

import json
from pathlib import Path

from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row
from tokenlaw.reports.writers import atomic_write, to_json

from .prover import is_mismatch

HEADER = ("Floating point is out of scope here: every statement is over the reals, with the "
          "operators' own code traced to z3 terms (the axioms: `tokenlaw docs symbolic`).")


class ProofRow(Row):
    """A row with one symbolic cell: its outcome is ``verdict.outcome`` of that cell
    (so an undecided expected violation reads "unknown", not "NOT reproduced")."""

    @property
    def outcome(self) -> str:
        return V.outcome(self.declared, self.cells[0].verdict)


def rows_from(results, planned) -> list:
    """Planned (operator, contract) rows, each with its single symbolic cell."""
    by = {(op, c): v for op, c, v in results}
    out = []
    for r in planned:
        cell = Cell(r.operator, r.contract, "symbolic", "real", by.get((r.operator, r.contract)))
        out.append(ProofRow(r.operator, r.contract, r.declared, r.reason, [cell]))
    return out


def failing(rows) -> list:
    """Rows that fail the suite: outcome against the declaration, or a replay mismatch."""
    return [r for r in rows if r.failing or any(c.verdict and is_mismatch(c.verdict) for c in r.cells)]


def _short_ce(v: V.Verdict) -> str:
    ce = v.counterexample or {}
    keep = {k: ce[k] for k in ce if k not in ("params", "failed")}
    text = json.dumps(keep, separators=(",", ":"))
    return text if len(text) <= 240 else text[:237] + "..."


def to_markdown(rows, meta: dict) -> str:
    counts: dict = {}
    for r in rows:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    bad = failing(rows)
    lines = ["# tokenlaw symbolic proofs", "", f"**{'PASS' if not bad else 'FAIL'}** - {len(rows)} rows; "
             + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".", "", HEADER, "",
             f"Solver {meta['solver']}, timeout {meta['timeout']:g} s per query, total {meta['seconds']:.1f} s.", ""]
    if bad:
        lines += ["## Failing rows", ""] + [f"- `{r.id}`: {r.outcome} - {r.cells[0].verdict.detail}" for r in bad] + [""]
    lines += ["| row | declared | outcome | shapes | params | time | evidence |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r.cells[0].verdict
        if v is None:
            continue
        shapes = ", ".join(f"{k}={x}" for k, x in v.extra.get("shapes", {}).items())
        evidence = v.detail
        if v.status == V.REFUTED:
            evidence += f"; counterexample {_short_ce(v)}"
        lines.append(f"| `{r.id}` | {r.declared} | {r.outcome} | {shapes} | {v.extra.get('params', '')} | "
                     f"{v.seconds:.2f}s | {evidence.replace('|', '/')} |")
    lines.append("")
    return "\n".join(lines)


def write(rows, meta: dict, out_dir) -> tuple:
    out_dir = Path(out_dir)
    md, js = out_dir / "proofs.md", out_dir / "proofs.json"
    data = to_json(rows, meta)
    data["note"] = HEADER
    atomic_write(js, json.dumps(data, indent=1) + "\n")
    atomic_write(md, to_markdown(rows, meta))
    return md, js
