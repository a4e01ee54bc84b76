"""The mutation report: each mutant, what it breaks, and the contracts that killed it.

A :class:`MutationReport` is what ``tokenlaw mutate`` found; it is written by the one writer,
``formats.write(report, out, formats.MUTATION, stem="mutation")`` (``OUT/mutation.{json,md}``).
"""
from __future__ import annotations

import dataclasses

from tokenlaw.properties.mutants import MutantResult


@dataclasses.dataclass(frozen=True)
class MutationReport:
    """One ``tokenlaw mutate`` run: each mutant's result, the rows failing before any mutation, its settings."""

    results: tuple[MutantResult, ...]
    baseline: frozenset          # row ids failing unmutated (they cannot count as kills)
    meta: dict                   # examples per cell, seed

    @property
    def killed(self) -> int:
        return sum(r.killed for r in self.results)

    def to_json(self) -> dict:
        return {"meta": self.meta, "baseline_failing": sorted(self.baseline),
                "killed": self.killed, "total": len(self.results),
                "mutants": [{"name": r.name, "backend": r.backend, "description": r.description,
                             "operators": list(r.operators), "killed": r.killed, "killers": r.killers,
                             "replays": r.replays, "rows": r.rows, "seconds": round(r.seconds, 2)}
                            for r in self.results]}


def to_markdown(report: MutationReport) -> str:
    meta = report.meta
    lines = ["# tokenlaw mutation report", "",
             f"**{report.killed}/{len(report.results)} mutants killed** ({meta.get('examples')} examples per cell "
             f"per dtype, seed {meta.get('seed')}). A survivor is a defect of the suite.", ""]
    if report.baseline:
        lines += [f"Rows failing before any mutation (not counted as kills): {', '.join(sorted(report.baseline))}",
                  ""]
    lines += ["| mutant | backend | seeded bug | rows run | killed by |", "|---|---|---|---|---|"]
    for r in report.results:
        killers = ", ".join(f"`{k}`" + (f" (replay `{r.replays[k]}`)" if k in r.replays else "") for k in r.killers)
        lines.append(f"| `{r.name}` | {r.backend} | {r.description} | {r.rows} | {killers or '**SURVIVED**'} |")
    lines.append("")
    return "\n".join(lines)
