"""The proofs report: the symbolic tier's rows as Markdown and JSON (reports/proofs.{md,json}, written by
``formats.write(doc, out, formats.PROOFS, stem="proofs")``).

The same :class:`~.document.Document` as the conformance report (its rows are the
planned rows the symbolic tier filled, :func:`~tokenlaw.properties.plan.proved`:
one cell per row, backend "symbolic", dtype "real"), written as JSON with a top-level ``note``.  The Markdown shows, per cell, the shapes, the solver, the time
and, for a refutation, the counterexample and its measured eager replay.
"""
from __future__ import annotations

import dataclasses
import json

from tokenlaw.properties import verdict as V

from .document import Document, Result
from .meta import PROOFS_NOTE, Meta
from .text import interrupted_line, rows_word

HEADER = PROOFS_NOTE         # the scope note on top of the report, and in its run's meta

LEGEND = [
    "`proved`: z3 showed `premises and axioms -> law and every obligation` valid for every real input and "
    "every parameter as a symbol over its declared domain (the premises listed in the row), at the stated shapes "
    "(batch 1, one head); masks and case selectors are enumerated, each its own query.",
    "`holds for sampled weights`: proved only with the weights fixed to one drawn sample (rounded to /100; "
    "scalars such as tau stay symbols), because the all-symbolic query was undecided. A pass, never `proved`.",
    "`refuted`: z3 found a counterexample and it replayed on the eager float64 code (the discrepancy is measured).",
    "`unknown`: z3 undecided within the budget (reason given), or a counterexample that did not replay "
    "(MISMATCH, a failure). Never counted as proved.",
    "`vacuous`: no enumerated input satisfied the premises: nothing was checked. Not green, not a failure.",
    "`not symbolically traceable`: the operator's code does something the namespaces cannot model soundly "
    "(Python `/` `//` by a traced value, `**` with a non-literal exponent, a Python `if` / comparison / bool() "
    "on a traced value, a direct torch.* / math.* / numpy call); file:line given. Not a failure of the suite.",
    "`not runnable here`: the contract has no real-arithmetic statement (gradients, limits, trace properties).",
]


def is_mismatch(verdict: V.Verdict) -> bool:
    """A refutation that did not replay (the symbolic tier marks it so): a failure of the suite, whatever the
    declaration.  Read off the verdict here, so that rendering a proofs document needs no solver."""
    return bool(verdict.mismatch)


def failing(rows) -> list:
    """Rows that fail the suite: outcome against the declaration, or a replay mismatch."""
    return [r for r in rows if r.failing or any(c.verdict and is_mismatch(c.verdict) for c in r.cells)]


def _claimed(rows, *outcomes) -> list:
    return [r for r in rows if r.declared == "claims" and r.outcome in outcomes]


def no_symbolic_form(rows) -> dict:
    """{contract: {reason: [row ids]}} of the claimed rows the symbolic tier has no form for.

    The reason is the verdict's (for most, the contract's own: "no symbolic form: gradients are
    not real-arithmetic statements"); rows of one contract with another reason are listed apart.
    """
    out: dict = {}
    for r in _claimed(rows, V.Outcome.NOT_RUNNABLE):
        reason = r.cells[0].verdict.written_detail if r.cells and r.cells[0].verdict else ""
        out.setdefault(r.contract, {}).setdefault(reason, []).append(r.id)
    return out


@dataclasses.dataclass(frozen=True)
class ProofStanding:
    """What a proofs document established (:func:`standing`), for the headline and ``--json``.

    ``proved`` of ``claimed`` rows; the claimed rows that hold only for ``sampled`` weights, the
    ``undecided`` ones ({id: outcome}), those with ``no_symbolic_form`` ({contract: {reason: [ids]}}) and the
    ``not_traceable`` ones, the ``failing`` ones; the ``expected`` violations and how many were ``refuted``
    (replayed).
    """

    result: Result
    proved: int
    claimed: int
    sampled: int
    undecided: dict
    no_symbolic_form: dict
    not_traceable: list
    failing: list
    expected: int
    refuted: int

    def to_json(self) -> dict:
        """The fields in the order ``tokenlaw prove --json`` prints them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def standing(doc: Document) -> ProofStanding:
    """What a proofs document established, from its typed rows (see :class:`ProofStanding`)."""
    rows, st = doc.rows, doc.standing()
    outcome = {}
    for r in rows:
        outcome.setdefault(r.id, r.outcome)
    violates = [r for r in rows if r.declared == "violates"]
    return ProofStanding(result=st.result, proved=st.claimed["proved"], claimed=st.claimed["rows"],
                         sampled=len(_claimed(rows, V.Outcome.SAMPLED)),
                         undecided={i: outcome[i] for i in st.undecided},
                         no_symbolic_form=no_symbolic_form(rows),
                         not_traceable=[r.id for r in _claimed(rows, V.Outcome.NOT_TRACEABLE)],
                         failing=list(st.failing),
                         expected=len(violates), refuted=sum(r.outcome == V.Outcome.EXPECTED for r in violates))


def headline(st: ProofStanding) -> str:
    """'proved 50 of 176 claimed rows (28%); 1 only for sampled weights, 2 undecided, ...' of :func:`standing`."""
    c, p = st.claimed, st.proved
    pct = f" ({100 * p / c:.0f}%)" if c else ""
    nsf = sum(len(ids) for by in st.no_symbolic_form.values() for ids in by.values())
    parts = [f"proved {p} of {c} claimed rows{pct}"]
    parts += [f"{n} {what}" for n, what in ((st.sampled, "hold for sampled weights only (not proved)"),
                                             (len(st.undecided), "undecided (unknown, vacuous or trace differs)"),
                                             (nsf, "with no symbolic form"),
                                             (len(st.not_traceable), "not symbolically traceable"),
                                             (len(st.failing), "failing")) if n]
    text = "; ".join(parts[:1] + [", ".join(parts[1:])] if parts[1:] else parts)
    if st.expected:
        text += f"; {st.refuted} of {st.expected} expected violations refuted (replayed on eager)"
    if c and not p and not st.failing:
        text += "; nothing was proved, so this run is undecided"
    return text


def _short_ce(v: V.Verdict) -> str:
    ce = v.counterexample or {}
    keep = {k: ce[k] for k in ce if k not in ("params", "failed")}
    text = json.dumps(keep, separators=(",", ":"))
    return text if len(text) <= 240 else text[:237] + "..."


def document(rows, meta: Meta, laws=None) -> Document:
    """The proofs report's document: the rows and the run's meta, with the scope note on top (``laws``:
    ``{contract: (law, exact)}`` for contracts the catalogue lacks, a user's own)."""
    return Document(rows, meta, laws=dict(laws or {}), extra={"note": HEADER})


def to_markdown(doc: Document) -> str:
    rows, meta, st = doc.rows, doc.meta, standing(doc)
    run = meta.run
    counts: dict = {}
    for r in rows:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    bad = failing(rows)
    cut = interrupted_line(meta)
    lines = ["# tokenlaw symbolic proofs", "", f"**{st.result}** - {headline(st)}.", "",
             *([f"**{cut}**", ""] if cut else []),
             f"{len(rows)} rows: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".", "", HEADER, "",
             f"Solver {run.environment.solver}, timeout {run.settings.timeout:g} s per query, "
             f"total {run.execution.seconds:.1f} s.", ""]
    if bad:
        lines += ["## Failing rows", ""] + [f"- `{r.id}`: {r.outcome} - {r.cells[0].verdict.detail}" for r in bad] + [""]
    if st.undecided:
        lines += ["## Undecided claimed rows (why this run is not a PASS)", ""]
        lines += [f"- `{i}`: {out}" for i, out in st.undecided.items()] + [""]
    if st.no_symbolic_form:
        lines += ["## Claimed rows with no symbolic form, by contract (not proved here; `tokenlaw check` judges them on tensors)", ""]
        for contract, by in st.no_symbolic_form.items():
            for reason, ids in by.items():
                lines.append(f"- `{contract}` ({rows_word(len(ids))}) - {reason}: " + ", ".join(f"`{i}`" for i in ids))
        lines.append("")
    lines += ["## Statuses", ""] + [f"- {x}" for x in LEGEND] + [""]
    lines += _listed(rows, "Unknown and vacuous rows (with the reason)", (V.Status.UNKNOWN, V.Status.VACUOUS))
    lines += _listed(rows, "Not symbolically traceable (file:line)", (V.Status.NOT_TRACEABLE,))
    lines += _listed(rows, "Holds for sampled weights only (not proved)", (V.Status.SAMPLED,))
    arguments = {}
    for r in rows:
        v = r.cells[0].verdict
        if v is not None and v.status in (V.Status.PROVED, V.Status.SAMPLED) and v.evidence is not None and v.evidence.argument:
            arguments.setdefault(v.evidence.argument, []).append(r.id)
    for argument, ids in arguments.items():
        lines += ["## How the host rows follow (the composite argument)", "", argument, "",
                  "Rows proved this way: " + ", ".join(f"`{i}`" for i in ids) + ".", ""]
    lines += ["## Rows", "",
              "| row | declared | outcome | shapes | premises | params | time | evidence |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r.cells[0].verdict
        if v is None:
            continue
        e = v.evidence
        shapes = ", ".join(f"{k}={x}" for k, x in (e.shapes if e is not None and e.shapes else {}).items())
        premises = "; ".join(e.premises or ()) if e is not None else ""
        premises = premises or ("none" if e is not None and e.shapes is not None else "")
        evidence = v.detail
        if v.status == V.Status.REFUTED:
            evidence += f"; counterexample {_short_ce(v)}"
        lines.append(f"| `{r.id}` | {r.declared} | {r.outcome} | {shapes} | {premises.replace('|', '/')} | "
                     f"{v.params or ''} | {v.seconds:.2f}s | {evidence.replace('|', '/')} |")
    lines.append("")
    return "\n".join(lines)


def _listed(rows, title, statuses) -> list:
    out = [f"- `{r.id}` ({r.declared}): {r.cells[0].verdict.detail}" for r in rows
           if r.cells[0].verdict is not None and r.cells[0].verdict.status in statuses]
    return [f"## {title}", ""] + out + [""] if out else []
