"""The standing adversary's report: the kill matrix of the conditional mutants, every survivor with its reason.

A :class:`KillMatrix` is what ``fuzz.mutants.adversary.run`` returns; the one writer writes it,
``formats.write(report, out, formats.ADVERSARY, stem="adversary")`` (``OUT/adversary.{json,md}``).
"""
from __future__ import annotations

import dataclasses
import math


def _written(record, names) -> dict:
    """The fields ``names`` of ``record`` that it holds (an older report's record lacks some: None, not written)."""
    return {n: getattr(record, n) for n in names if getattr(record, n) is not None}


@dataclasses.dataclass(frozen=True)
class MutantRun:
    """One conditional mutant's outcome (``fuzz.mutants.adversary.Outcome``'s JSON view, typed): which
    operator, predicate (its ``axis`` and text) and wrongness (its ``family``) it is, its ``status``
    (killed, gap, inert, equivalent, crashed) and the ``reason``, the rows that killed it, the cells run, its
    wall and CPU seconds.  A field an older or hand-made record lacks is None and is not written back."""

    id: str
    status: str
    reason: str
    operator: str | None = None
    predicate: str | None = None
    axis: str | None = None
    predicate_text: str | None = None
    wrongness: str | None = None
    family: str | None = None
    killers: list | None = None
    cells: int | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None

    FIELDS = ("id", "operator", "predicate", "axis", "predicate_text", "wrongness", "family", "status", "reason",
              "killers", "cells", "seconds", "cpu_seconds")          # the written order

    def to_json(self) -> dict:
        return _written(self, self.FIELDS)

    @classmethod
    def from_json(cls, d: dict) -> "MutantRun":
        return cls(**{k: d[k] for k in cls.FIELDS if k in d})


@dataclasses.dataclass(frozen=True)
class Tally:
    """How many mutants of one axis, law family or operator ended in each status."""

    total: int
    killed: int
    equivalent: int
    gap: int
    crashed: int
    inert: int | None = None         # absent from reports made before the inert status

    def to_json(self) -> dict:
        return _written(self, ("total", "killed", "equivalent", "inert", "gap", "crashed"))

    @classmethod
    def from_json(cls, d: dict) -> "Tally":
        return cls(d["total"], d["killed"], d["equivalent"], d["gap"], d["crashed"], d.get("inert"))


@dataclasses.dataclass(frozen=True)
class Figure:
    """The headline counts: mutants ``killed`` of the ``non_equivalent``, the ``equivalent`` ones (not counted),
    the ``gaps``, the ``inert`` where drawn and the runs whose check ``crashed``."""

    killed: int
    non_equivalent: int
    equivalent: int
    gaps: int
    crashed: int
    inert: int | None = None         # absent from reports made before the inert status

    def to_json(self) -> dict:
        return _written(self, ("killed", "non_equivalent", "equivalent", "gaps", "inert", "crashed"))

    @classmethod
    def from_json(cls, d: dict) -> "Figure":
        return cls(d["killed"], d["non_equivalent"], d["equivalent"], d["gaps"], d["crashed"], d.get("inert"))


@dataclasses.dataclass(frozen=True)
class KillMatrix:
    """One ``tokenlaw adversary`` run: its settings and cost (``meta``), the headline counts (``figure``), the
    tallies per predicate axis, law family and operator ({name: :class:`Tally`}), the rows failing unmutated,
    the wrongnesses not implemented, and each mutant's outcome (:class:`MutantRun`)."""

    meta: dict
    figure: Figure
    axes: dict
    families: dict
    operators: dict
    baseline_failing: list
    not_implemented: dict
    mutants: tuple

    def to_json(self) -> dict:
        tallies = lambda by: {name: t.to_json() for name, t in by.items()}     # noqa: E731
        return {"meta": self.meta, "figure": self.figure.to_json(), "axes": tallies(self.axes),
                "families": tallies(self.families), "operators": tallies(self.operators),
                "baseline_failing": self.baseline_failing, "not_implemented": self.not_implemented,
                "mutants": [m.to_json() for m in self.mutants]}

    @classmethod
    def from_json(cls, data: dict) -> "KillMatrix":
        """The report of ``fuzz.mutants.adversary.run`` / ``splice``, or of a written ``adversary.json``."""
        tallies = lambda by: {name: Tally.from_json(t) for name, t in by.items()}   # noqa: E731
        return cls(data["meta"], Figure.from_json(data["figure"]), tallies(data["axes"]), tallies(data["families"]),
                   tallies(data["operators"]), data["baseline_failing"], data["not_implemented"],
                   tuple(MutantRun.from_json(m) for m in data["mutants"]))


def markdown(report: KillMatrix) -> str:
    """The report as Markdown."""
    f, meta = report.figure, report.meta
    lines = ["# Standing adversary: conditional mutants", "",
             f"{f.killed} of {f.non_equivalent} non-equivalent conditional mutants killed "
             f"({f.gaps} gaps, {f.inert or 0} inert where drawn, {f.crashed} crashed the check; "
             f"{f.equivalent} equivalent, not counted); {meta['mutants_run']} of "
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
            lines.append(f"| {name} | {t.killed} | {t.total - t.equivalent} | {t.equivalent} "
                         f"| {t.gap} | {t.inert or 0} | {t.crashed} |")
        lines.append("")
    surv = [m for m in report.mutants if m.status != "killed"]
    lines += ["## Survivors by kind", "", "| status | kind | mutants |", "|---|---|---|"]
    kinds = {}
    for m in surv:
        kinds.setdefault((m.status, kind(m.reason)), []).append(m.id)
    lines += [f"| {st} | {k} | {len(ids)} |" for (st, k), ids in sorted(kinds.items())] + [""]
    lines += ["## Survivors", ""]
    lines += [f"- `{m.id}` **{m.status}**: {m.reason}" for m in surv] or ["none"]
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
    return sum(m.seconds for m in ms) / len(ms) if ms else math.nan
