"""The combined view of several tiers: one row per (operator, contract), green only if no tier refuted it.

``tokenlaw verify`` runs the fuzz check and the symbolic prove on one
selection; ``tokenlaw report merge conformance.json proofs.json`` joins two
written reports.  Either way :func:`combine` lines the tiers' rows up and
``formats.write(ver, out, formats.VERIFICATION, stem="verification")`` writes ``OUT/verification.{md,json}``.

A row's combined outcome is decided from its tiers' own outcomes, in this order
(the rule of :func:`combined_outcome`):

1. some tier fails (a claimed law violated or refuted, an expected violation
   not reproduced or proved away, a domain mismatch, a refutation that did not
   replay): the row is red, whatever the other tiers say -- a law that holds on
   every drawn tensor but is refuted in the reals is red, and so is one proved
   in the reals and violated on tensors;
2. a claimed row some tier left undecided (unknown, vacuous, trace differs
   from eager) is undecided, never green: the same rule as ``prove`` alone;
3. otherwise a row some tier established (holds / proved / holds for sampled
   weights; an expected violation reproduced) is green;
4. otherwise nothing ran it (no symbolic form, not runnable, not traceable).

The run's result is :func:`~.document.standing` of the combined rows (a run
with claimed rows and none established is undecided).
"""
from __future__ import annotations

import dataclasses
import json

from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V

from .document import ESTABLISHED, Document, merge_shards, stable, standing, tier_name  # noqa: F401 (re-exported)
from .meta import Meta
from .text import first_counterexample, rows_word

# The order in which a combined row takes a tier's outcome when several tiers disagree.
FAILING_FIRST = (V.Outcome.RAISED, V.Outcome.UNEXPECTED, V.Outcome.DOMAIN_MISMATCH, V.Outcome.NOT_REPRODUCED)
UNDECIDED_FIRST = (V.Outcome.TRACE_DIFFERS, V.Outcome.UNKNOWN, V.Outcome.VACUOUS)
GREEN_FIRST = (V.Outcome.PROVED, V.Outcome.HOLDS, V.Outcome.SAMPLED, V.Outcome.EXPECTED)
MISMATCH = "refutation did not replay on eager"

# What a tier's outcome says in that tier's own words (the row outcome otherwise).
WORDS = {"symbolic": {V.Outcome.NOT_RUNNABLE: "no symbolic form", V.Outcome.SAMPLED: "sampled weights only",
                      V.Outcome.EXPECTED: "refuted (expected)", V.Outcome.UNEXPECTED: "REFUTED",
                      V.Outcome.NOT_REPRODUCED: "proved away (expected violation)"},
         "fuzz": {V.Outcome.EXPECTED: "violated (expected)", V.Outcome.UNEXPECTED: "VIOLATED"}}


@dataclasses.dataclass(frozen=True)
class TierRow:
    """What one tier established for a row: its row outcome, whether it fails the suite, its evidence."""

    tier: str
    outcome: str
    failing: bool
    mismatch: bool
    detail: str

    @property
    def words(self) -> str:
        if self.mismatch:
            return f"MISMATCH ({MISMATCH})"
        return WORDS.get(self.tier.split(":")[0], {}).get(self.outcome, self.outcome)

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "says": self.words, "failing": self.failing, "detail": self.detail}


@dataclasses.dataclass(frozen=True)
class CombinedRow:
    operator: str
    contract: str
    declared: str | None
    reason: str
    tiers: tuple                    # TierRow, in the order of the runs

    @property
    def id(self) -> str:
        return f"{self.operator}-{self.contract}"

    @property
    def failing(self) -> bool:
        return any(t.failing for t in self.tiers)

    @property
    def outcome(self) -> str:
        return combined_outcome(self.declared, self.tiers)

    @property
    def colour(self) -> str:
        """green / red / undecided / not run: the row at a glance."""
        if self.failing:
            return "red"
        out = self.outcome
        if out in V.UNDECIDED:
            return "undecided"
        return "green" if out in ESTABLISHED or out == V.Outcome.EXPECTED else "not run"

    def tier(self, name: str) -> TierRow | None:
        return next((t for t in self.tiers if t.tier == name), None)


def combined_outcome(declared, tiers) -> str:
    """The row's outcome over its tiers (the module's rule): failing, then undecided, then established."""
    outs = [t.outcome for t in tiers]
    for t in tiers:
        if t.mismatch:                      # a failure whose outcome reads "unknown": name the failing kind
            return t.outcome
    for out in FAILING_FIRST:
        if out in outs:
            return out
    if declared == "claims":
        for out in UNDECIDED_FIRST:
            if out in outs:
                return out
    for out in GREEN_FIRST:
        if out in outs:
            return out
    for out in UNDECIDED_FIRST:
        if out in outs:
            return out
    return next((o for o in outs if o in V.NOT_RUN), V.Outcome.UNDECLARED)


@dataclasses.dataclass(frozen=True)
class Verification:
    """The combined rows and the record of every run they came from (``runs``: (its column, its RunMeta))."""

    rows: tuple
    runs: tuple
    tiers: tuple                    # column names, in run order
    tier_summaries: dict            # {tier: that tier's own report summary}

    def standing(self):
        """What the combined rows established (:func:`~.document.standing`; a pass of any tier counts)."""
        return standing(((r.id, r.declared, r.outcome, r.failing) for r in self.rows), proof=False)

    @property
    def expected(self) -> tuple[int, int]:
        """(rows declared to violate, those some tier reproduced)."""
        violates = [r for r in self.rows if r.declared == "violates"]
        return len(violates), sum(r.colour == "green" for r in violates)

    def summary(self) -> dict:
        """The report's ``summary``: the standing, the row colours, the expected violations, each tier's own."""
        colours: dict = {}
        for r in self.rows:
            if r.declared is not None:
                colours[r.colour] = colours.get(r.colour, 0) + 1
        violates, reproduced = self.expected
        return {**self.standing().to_json(), "rows": len(self.rows), "combined": dict(sorted(colours.items())),
                "expected": {"rows": violates, "reproduced": reproduced},
                "tiers": {name: {k: s[k] for k in _TIER_SUMMARY} for name, s in self.tier_summaries.items()}}

    def to_json(self) -> dict:
        rows = [{"id": r.id, "operator": r.operator, "contract": r.contract, "declared": r.declared,
                 "reason": r.reason, "outcome": r.outcome, "combined": r.colour,
                 "tiers": {t.tier: t.to_json() for t in r.tiers}} for r in self.rows]
        runs = [{**run.to_json(), "column": name} for name, run in self.runs]
        return {"schema": 1, "meta": {"tier": "combined", "tiers": list(self.tiers),
                                      "runs": json.loads(json.dumps(runs))},
                "summary": self.summary(), "rows": rows}


# The fields of each tier's own summary the combined report repeats.
_TIER_SUMMARY = ("result", "claimed", "failing", "undecided")


def _detail(row, meta: Meta) -> str:
    if meta.tier is V.Tier.SYMBOLIC:
        v = row.cells[0].verdict if row.cells else None
        text = v.written_detail if v is not None else ""
    else:
        text = first_counterexample(row, meta)
    return text if len(text) <= 300 else text[:297] + "..."


def _tier_rows(doc: Document, name: str) -> dict:
    out = {}
    for row in doc.rows:
        mismatch = row.mismatched
        failing = row.outcome in V.FAILING or mismatch
        show = failing or row.outcome in V.UNDECIDED or row.outcome in V.NOT_RUN
        out[row.id] = (row, TierRow(name, row.outcome, failing, mismatch, _detail(row, doc.meta) if show else ""))
    return out


def combine(docs: list[Document]) -> Verification:
    """The combined view of single-tier documents (at most one per tier; merge a run's shards first).

    Rows are lined up by (operator, contract) in the order first seen; a row one tier lacks has no
    column there.  Two tiers that declare a row differently were made from different registries:
    refused, naming the row.
    """
    names = [tier_name(d.meta) for d in docs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InvalidArgument(f"reports: more than one {dup[0]} report; join a run's shards with "
                              "`tokenlaw report merge` first, then combine the tiers")
    order: dict = {}
    for doc, name in zip(docs, names):
        for rid, (row, tier) in _tier_rows(doc, name).items():
            if rid not in order:
                order[rid] = (row, [])
            first, tiers = order[rid]
            if first.declared != row.declared:
                raise InvalidArgument(f"reports: row {rid} is declared {first.declared!r} in one report and "
                                      f"{row.declared!r} in the {name} report: were they made from the same operators?")
            tiers.append(tier)
    rows = tuple(CombinedRow(r.operator, r.contract, r.declared, r.reason, tuple(t)) for r, t in order.values())
    runs = tuple((name, run) for d, name in zip(docs, names) for run in d.runs)
    return Verification(rows, runs, tuple(names), {n: d.summary() for d, n in zip(docs, names)})


def combine_or_merge(docs: list[Document], sources: list[str]):
    """``tokenlaw report merge``: the shards of one tier give their merged Document; several tiers
    (each possibly in shards) give the combined :class:`Verification`."""
    groups: dict = {}
    for doc, src in zip(docs, sources):
        groups.setdefault(tier_name(doc.meta), []).append((doc, src))
    merged = [merge_shards([d for d, _ in g], [s for _, s in g]) if len(g) > 1 else g[0][0] for g in groups.values()]
    return merged[0] if len(merged) == 1 else combine(merged)


def headline(ver: Verification) -> str:
    """'176 claimed rows: 150 green, 2 undecided, 0 red, 24 not run; symbolic proved 50 of 176; ...'"""
    c = ver.standing().claimed
    colours = {k: 0 for k in ("green", "undecided", "red", "not run")}
    for r in ver.rows:
        if r.declared == "claims":
            colours[r.colour] += 1
    text = f"{rows_word(c['rows']).replace('row', 'claimed row')}: " + ", ".join(f"{n} {k}" for k, n in colours.items())
    for name, s in ver.tier_summaries.items():
        sc = s["claimed"]
        verb = f"proved {sc['proved']}" if name == "symbolic" else f"established {sc['established']}"
        text += f"; {name} {verb} of {sc['rows']} ({s['result']})"
    violates, reproduced = ver.expected
    if violates:
        text += f"; {reproduced} of {violates} expected violations reproduced"
    if c["rows"] and not c["established"] and not c["failing"]:
        text += "; nothing established, so the run is undecided"
    return text


def _run_facts(run) -> dict:
    """What the combined report's Runs section says of a run: its backend and budget."""
    s = run.settings
    if run.tier is V.Tier.SYMBOLIC:
        return {"backend": s.backend, "solver": run.environment.solver, "timeout": s.timeout}
    return {"backend": s.backend, "profile": s.profile, "examples": s.examples, "seed": s.seed}


def to_markdown(ver: Verification) -> str:
    """The combined report: the result and headline, red and undecided rows, then every row per tier."""
    tiers, rows = ver.tiers, ver.rows
    lines = [f"# tokenlaw verification ({' + '.join(tiers)})", "", f"**{ver.standing().result}** - {headline(ver)}.",
             "",
             "A row is green only if no tier refuted it, no tier left a claimed row undecided (unknown, vacuous, "
             "trace differs from eager) and some tier established it; red if any tier fails it, whatever the "
             "others say. Each column is that tier's own outcome (`tokenlaw docs symbolic`, `tokenlaw docs fuzz`).",
             ""]
    for colour, title in (("red", "Red rows (some tier fails them)"),
                          ("undecided", "Undecided claimed rows (why this run is not a PASS)")):
        picked = [r for r in rows if r.colour == colour and (colour == "red" or r.declared == "claims")]
        if picked:
            lines += [f"## {title}", ""]
            for r in picked:
                said = "; ".join(f"{t.tier}: {t.words}" + (f" ({t.detail})" if t.detail else "") for t in r.tiers)
                lines.append(f"- `{r.id}` ({r.declared}): {said.replace('|', '/')}")
            lines.append("")
    lines += ["## Rows", "", "| row | declared | combined | " + " | ".join(tiers) + " |",
              "|---|---|---|" + "---|" * len(tiers)]
    for r in rows:
        cols = [r.tier(t).words if r.tier(t) is not None else "-" for t in tiers]
        mark = {"red": "**RED**", "green": "green"}.get(r.colour, r.colour)
        lines.append(f"| `{r.id}` | {r.declared} | {mark} | " + " | ".join(cols) + " |")
    lines += ["", "## Runs", ""]
    for name, run in ver.runs:
        lines.append(f"- {name}: " + ", ".join(f"{k} {v}" for k, v in _run_facts(run).items()))
    lines.append("")
    return "\n".join(lines)
