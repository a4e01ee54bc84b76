"""The standing adversary's report: the kill matrix of the conditional mutants, every survivor with its reason.

A :class:`KillMatrix` is what ``fuzz.mutants.adversary.run`` returns; the one writer writes it,
``formats.write(report, out, formats.ADVERSARY, stem="adversary")`` (``OUT/adversary.{json,md}``).
"""
from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class KillMatrix:
    """One ``tokenlaw adversary`` run: its settings and cost (``meta``), the headline counts (``figure``), the
    tallies per predicate axis, law family and operator, the rows failing unmutated, the wrongnesses not
    implemented, and each mutant's outcome (its JSON view)."""

    meta: dict
    figure: dict
    axes: dict
    families: dict
    operators: dict
    baseline_failing: list
    not_implemented: dict
    mutants: list

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: dict) -> "KillMatrix":
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


def markdown(report: KillMatrix) -> str:
    """The report as Markdown."""
    f, meta = report.figure, report.meta
    lines = ["# Standing adversary: conditional mutants", "",
             f"{f['killed']} of {f['non_equivalent']} non-equivalent conditional mutants killed "
             f"({f['gaps']} gaps, {f.get('inert', 0)} inert where drawn, {f['crashed']} crashed the check; "
             f"{f['equivalent']} equivalent, not counted); {meta['mutants_run']} of "
             f"{meta['mutants_built']} mutants run, seed {meta['seed']}, {meta['examples']} examples per cell, "
             f"{meta['workers']} worker(s), {meta['seconds']}s (baseline {meta['baseline_seconds']}s); CPU of this "
             f"process: baseline {meta['baseline_cpu_seconds']}s, mutants {meta['mutants_cpu_seconds']}s.", ""]
    for run in meta.get("spliced", ()):
        what = (f"every mutant of {', '.join(run['operators'])}" if "operators" in run else
                f"the mutants {', '.join(run['mutants'])} (each against its operator's fresh baseline)")
        lines += [f"Spliced in: {what} re-run ({run['mutants_run']} "
                  f"mutants, {run['workers']} worker(s), {run['seconds']}s, baseline {run['baseline_seconds']}s"
                  + (f", {run['date']}" if run.get("date") else "") + "); the other mutants as "
                  "recorded by the run above.", ""]
    for title, tally, col in (("Per axis (predicate family)", report.axes, "axis"),
                              ("Per law family (wrongness)", report.families, "family"),
                              ("Per operator", report.operators, "operator")):
        lines += [f"## {title}", "",
                  f"| {col} | killed | non-equivalent | equivalent | gap | inert where drawn | check crashed |",
                  "|---|---|---|---|---|---|---|"]
        for name, t in sorted(tally.items()):
            lines.append(f"| {name} | {t['killed']} | {t['total'] - t['equivalent']} | {t['equivalent']} "
                         f"| {t['gap']} | {t.get('inert', 0)} | {t['crashed']} |")
        lines.append("")
    surv = [m for m in report.mutants if m["status"] != "killed"]
    lines += ["## Survivors by kind", "", "| status | kind | mutants |", "|---|---|---|"]
    kinds = {}
    for m in surv:
        kinds.setdefault((m["status"], kind(m["reason"])), []).append(m["id"])
    lines += [f"| {st} | {k} | {len(ids)} |" for (st, k), ids in sorted(kinds.items())] + [""]
    lines += ["## Survivors", ""]
    lines += [f"- `{m['id']}` **{m['status']}**: {m['reason']}" for m in surv] or ["none"]
    lines += ["", "## Rows failing unmutated (never counted as kills)", ""]
    lines += [f"- {r}" for r in report.baseline_failing] or ["none"]
    lines += ["", "## Wrongness not implemented", ""]
    lines += [f"- {k}: {v}" for k, v in report.not_implemented.items()]
    return "\n".join(lines) + "\n"


_KINDS = ("not deterministic", "control", "at n = 1", "rounds to 1", "outside the declared", "compares the operator with itself",
          "inert where drawn",
          "never drawn", "never effective", "held only in rows of laws not meant", "wrong outputs reached",
          "the check crashed")


def kind(reason: str) -> str:
    """The kind of a survivor's reason (the first of :data:`_KINDS` it names), for the report's tally."""
    return next((k for k in _KINDS if k in reason), "other")


def unit_rate(report: KillMatrix) -> float:
    """Mean seconds per mutant run (for extrapolating a sample to the full matrix)."""
    ms = report.mutants
    return sum(m["seconds"] for m in ms) / len(ms) if ms else math.nan
