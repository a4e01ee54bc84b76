"""The normaliser law table: which laws each attention keeps, as the run's report documents judged them.

Rows are the attentions of the run (:func:`members`): every operator with the
``score_normaliser`` trait (it exposes its row normaliser ``W(S)``), and every
other operator that mixes tokens under a visibility mask and is not a host
(an attention whose weights are not a function of the scores alone, e.g.
OAttention's presence gate).  The traits are read from the documents'
``meta.traits``, which the check and prove runs record from the registry; a
document without them (written before they were recorded) gives the score
normalisers only: the operators declaring a contract that requires the trait.

Columns (:data:`COLUMNS`) are the properties people compare normalisers by,
each judged by one contract of the catalogue, or by none yet (the legend then
says "no contract yet" and no cell claims a verdict).  The column-to-contract
mapping is this table's own choice of view; what the law says, who declares
it and how a tier judges it stay with the contract and the operators.

A cell is what *these* documents say: for each tier that has the row (fuzz,
symbolic, a kernel backend), that tier's row outcome, e.g. ``proved / holds``
when the symbolic tier proved it and the fuzz tier saw it hold; an expected
violation reproduced links to its counterexample (listed under the table).  A
tier that has no form for the law (the symbolic tier's "no symbolic form")
adds nothing to a cell another tier judged.  An operator that does not declare
the contract reads "not declared"; a contract outside the run's
``--contract`` selection reads "not in this run": never a verdict nobody made.

:func:`build` makes the table from Documents (their typed rows; the traits from their meta);
:func:`markdown`, :func:`html` and :func:`readme` render it;
:func:`splice` writes the README block between :data:`BEGIN` and :data:`END`.
"""
from __future__ import annotations

import dataclasses
import json
import re
from xml.sax.saxutils import escape

from . import marked_block
from tokenlaw.operators.errors import InvalidArgument
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS

from .document import tier_name
from .meta import Meta
from .text import SHORT, first_counterexample

# The trait that makes an operator a row by itself, and the traits that make one without it.
NORMALISER = "score_normaliser"
MASKED_MIXING = frozenset({"masked", "token_mixing"})
NOT_A_ROW = "host"


@dataclasses.dataclass(frozen=True)
class Column:
    """One property of the table: its ``title`` (reports), ``short`` header (README), the ``contract`` that
    judges it (None: no contract yet) and a one-line ``note`` for the legend."""

    key: str
    title: str
    short: str
    contract: str | None
    note: str = ""


COLUMNS = (
    Column("simplex", "simplex", "simplex", "simplex"),
    Column("sub_simplex", "sub-simplex", "sub-simplex", "sub_simplex"),
    Column("silence", "silence (row mass 0)", "silence", "silence",
           "a row can have mass 0: with no score above the threshold (tau, or 0 without one) W = 0 and out = 0"),
    Column("exact_zeros", "exact zeros", "exact 0", None,
           "a visible key can get weight exactly 0 (sparsity): no contract yet, so no verdict"),
    Column("shift", "score-shift invariance", "shift", "score_shift_invariance"),
    Column("permutation", "permutation equivariance", "perm.", "permutation_equivariance"),
    Column("null_source", "null-source insertion", "null src", "null_source_insertion"),
    Column("mask", "mask respect", "mask", "mask_respect",
           "out_i ignores the keys masked from i; masked-key insertion (adding a masked key changes no "
           "weight, which a normaliser counting all keys breaks) has no contract yet"),
    Column("causal", "causality (causal mask)", "causal", "causality"),
    Column("no_exp", "zero-transcendental", "no exp", "zero_transcendental"),
    Column("masked_row", "fully masked row = 0", "empty row", "empty_support",
           "the declared convention for a row with every key masked or null is out = 0 and finite; an operator "
           "with another convention (softmax's 0/0 = NaN) declares the contract violated and its "
           "counterexample shows the value"),
    Column("masked_value", "fully masked row = its declared value", "masked row", "masked_row",
           "an operator that declares its convention for a row with every key masked (@declare(masked_row=0), "
           "NaN or a stated value) is held to it bit for bit in every dtype"),
    Column("null_grad", "gradient at nulls", "null grad", "null_gradient"),
)

# Cell states that are not a tier's verdict.
NOT_DECLARED = "not declared"
NO_CONTRACT = "no contract yet"
NOT_IN_RUN = "not in this run"

# Tiers are shown in this order in a cell: proofs first, then draws, then any kernel backend.
TIER_ORDER = ("symbolic", "fuzz")


def _tier_rank(tier: str) -> tuple:
    return (TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER), tier)


@dataclasses.dataclass(frozen=True)
class Mark:
    """One tier's verdict on one cell: the row's outcome there and, for a violation, where its evidence is."""

    tier: str
    row: str                # the row id (operator-contract)
    outcome: str
    evidence: str = ""      # the counterexample (and replay command) of a violation, "" otherwise
    mismatch: bool = False  # a symbolic refutation that did not replay on eager (failing, whatever the outcome)

    @property
    def anchor(self) -> str:
        """The id of this mark's counterexample entry under the table."""
        return "lt-" + re.sub(r"[^A-Za-z0-9_-]", "-", f"{self.tier}-{self.row}")

    @property
    def failing(self) -> bool:
        return self.outcome in V.FAILING or self.mismatch


@dataclasses.dataclass(frozen=True)
class LawCell:
    """A row's cell in a column: ``state`` is "declared" (then ``marks`` hold each tier's verdict), or
    :data:`NOT_DECLARED`, :data:`NO_CONTRACT`, :data:`NOT_IN_RUN`."""

    operator: str
    column: Column
    state: str
    declared: str | None = None
    marks: tuple = ()


@dataclasses.dataclass(frozen=True)
class LawTable:
    operators: tuple
    cells: dict             # {(operator, column key): LawCell}
    tiers: tuple            # the tiers the documents hold, in display order
    laws: dict              # {contract: law} as the documents state them
    normalisers: tuple = ()         # the operators of the rows that are score normalisers
    columns: tuple = COLUMNS        # the columns shown (a run's report: :func:`in_report`)

    def cell(self, operator: str, column: Column) -> LawCell:
        return self.cells[(operator, column.key)]

    @property
    def evidence(self) -> list:
        """The marks with a counterexample, in table order (each listed once under the table)."""
        return [m for op in self.operators for col in self.columns for m in self.cell(op, col).marks if m.evidence]


def in_report(table: LawTable) -> LawTable:
    """The table as a run's report shows it: only the columns some row declares; no row at all where it would
    say nothing the report's matrix does not (issue 47: a 13-column table, nearly every cell "not declared",
    was appended for one user's operator that is no score normaliser).

    Nothing is left when no column is declared, or when the one row is no score normaliser (a table of one
    operator repeats its matrix rows; the table compares normalisers).  ``tokenlaw report lawtable`` and the
    README show the whole table.
    """
    columns = tuple(c for c in table.columns
                    if any(table.cell(op, c).state == "declared" for op in table.operators))
    lone = len(table.operators) == 1 and not table.normalisers
    return dataclasses.replace(table, operators=() if lone or not columns else table.operators, columns=columns)


def is_member(traits) -> bool:
    """An operator with these traits is a row: a score normaliser, or a masked token-mixer that is no host."""
    traits = frozenset(traits)
    return NORMALISER in traits or (MASKED_MIXING <= traits and NOT_A_ROW not in traits)


def _traits(docs) -> dict:
    """{operator: traits} the documents' runs recorded (``meta.traits``); empty for reports written before."""
    traits: dict = {}
    for d in docs:
        if d.meta.run is not None:
            traits.update(d.meta.run.provenance.traits)
    return traits


def _scored(docs) -> set:
    """The operators of ``docs`` declaring a contract that requires the score_normaliser trait."""
    return {r.operator for d in docs for r in d.rows
            if r.contract in CONTRACTS and NORMALISER in CONTRACTS[r.contract].requires}


def _normalisers(docs) -> set:
    """The score normalisers among the operators of ``docs`` (by the recorded traits, else by the contracts
    that require the trait, as :func:`members` reads them)."""
    traits = _traits(docs)
    if traits:
        return {op for op, t in traits.items() if NORMALISER in t}
    return _scored(docs)


def members(docs) -> list[str]:
    """The operators of the Documents ``docs`` that are rows, in the order first seen (see the module)."""
    order = list(dict.fromkeys(r.operator for d in docs for r in d.rows))
    traits = _traits(docs)
    if traits:
        return [op for op in order if op in traits and is_member(traits[op])]
    scored = _scored(docs)
    return [op for op in order if op in scored]


def _evidence(row, meta: Meta) -> str:
    if row.outcome != V.Outcome.EXPECTED and row.outcome not in V.FAILING and not row.mismatched:
        return ""
    if meta.tier is V.Tier.SYMBOLIC:
        v = row.cells[0].verdict if row.cells else None
        ce = {k: x for k, x in ((v.counterexample if v is not None else None) or {}).items()
              if k not in ("params", "failed")}
        text = ((v.written_detail if v is not None else "")
                + (f"; counterexample {json.dumps(ce, separators=(',', ':'))}" if ce else ""))
        return text if len(text) <= 400 else text[:397] + "..."
    return first_counterexample(row, meta)


def _in_scope(meta: Meta, contract: str) -> bool:
    chosen = meta.run.settings.contracts if meta.run is not None else None
    return not chosen or contract in chosen


def build(documents) -> LawTable:
    """The law table of single-tier Documents (a check's, a prove's, a kernel run's), at most one per tier."""
    docs = list(documents)
    tiers = [tier_name(d.meta) for d in docs]
    twice = sorted({t for t in tiers if tiers.count(t) > 1})
    if twice:
        raise InvalidArgument(f"law table: more than one {twice[0]} report (merge a run's shards first)")
    ops = members(docs)
    rows = {(t, r.operator, r.contract): (r, d.meta) for d, t in zip(docs, tiers) for r in d.rows}
    laws = {r.contract: d.law(r.contract)[0] for d in docs for r in d.rows}
    cells = {}
    for op in ops:
        for col in COLUMNS:
            cells[(op, col.key)] = _cell(op, col, docs, tiers, rows)
    return LawTable(tuple(ops), cells, tuple(sorted(set(tiers), key=_tier_rank)), laws,
                    normalisers=tuple(op for op in ops if op in _normalisers(docs)))


def _cell(op, col, docs, tiers, rows) -> LawCell:
    if col.contract is None:
        return LawCell(op, col, NO_CONTRACT)
    found = [(t, *rows[(t, op, col.contract)]) for t in tiers if (t, op, col.contract) in rows]
    if not found:
        ran = any(op in {r.operator for r in d.rows} and _in_scope(d.meta, col.contract) for d in docs)
        return LawCell(op, col, NOT_DECLARED if ran else NOT_IN_RUN)
    marks = [Mark(t, r.id, r.outcome, _evidence(r, meta), r.mismatched) for t, r, meta in found]
    # a tier with no form for the law (not runnable, not traceable) adds nothing where another tier judged
    judged = [m for m in marks if m.outcome not in V.NOT_RUN]
    marks = sorted(judged or marks, key=lambda m: _tier_rank(m.tier))
    return LawCell(op, col, "declared", found[0][1].declared, tuple(marks))


def to_json(table: LawTable) -> dict:
    """The table as data (``tokenlaw report lawtable --json``): columns, and per cell its state and tiers' marks."""
    return {"tiers": list(table.tiers), "operators": list(table.operators),
            "columns": [{"key": c.key, "title": c.title, "contract": c.contract} for c in COLUMNS],
            "cells": {op: {c.key: {"state": (cell := table.cell(op, c)).state, "declared": cell.declared,
                                   "marks": [{"tier": m.tier, "row": m.row, "outcome": str(m.outcome),
                                              "failing": m.failing} for m in cell.marks]}
                           for c in COLUMNS} for op in table.operators}}


# -- rendering ---------------------------------------------------------------------------------

SYMBOL = {V.Outcome.PROVED: "∎", V.Outcome.HOLDS: "✓", V.Outcome.SAMPLED: "✓s", V.Outcome.EXPECTED: "✗",
          V.Outcome.UNKNOWN: "?", V.Outcome.VACUOUS: "?", V.Outcome.TRACE_DIFFERS: "?", V.Outcome.NOT_RUNNABLE: "n/r",
          V.Outcome.NOT_TRACEABLE: "n/r", V.Outcome.NOT_APPLICABLE_BY_DESIGN: "n/a"}
STATE_SYMBOL = {NOT_DECLARED: "·", NO_CONTRACT: "–", NOT_IN_RUN: "(not run)"}
SYMBOL_LEGEND = ("∎ proved (z3, over the reals at the stated shapes) · ✓ holds (fuzz, every dtype) · "
                 "✓s holds for sampled weights · ✗ expected violation reproduced (a counterexample) · "
                 "? unknown / vacuous · n/r not run · FAIL a row that fails · · not declared · – no contract yet; "
                 "two tiers read symbolic/fuzz (∎/✓)")


def words(mark: Mark) -> str:
    """A tier's verdict in the reports' short words (a failing one in bold capitals)."""
    if mark.mismatch:
        return "**MISMATCH** (refutation did not replay on eager)"
    return SHORT.get(mark.outcome, mark.outcome)


def symbol(mark: Mark) -> str:
    return "FAIL" if mark.failing else SYMBOL.get(mark.outcome, "?")


def _rows_line(table: LawTable) -> str:
    tiers = " and ".join(table.tiers) or "no tier"
    return (f"Each cell is this run's verdict ({tiers}); a cell of two tiers shows both, symbolic first "
            "(`proved / holds`). Rows: every operator of the run with the `score_normaliser` trait and every "
            "masked token-mixing operator that is not a host.")


def legend(table: LawTable) -> list[str]:
    """One line per column: the contract that judges it and its law (or why it has none)."""
    out = []
    for col in table.columns:
        if col.contract is None:
            out.append(f"- **{col.title}**: {col.note}.")
            continue
        law = table.laws.get(col.contract) or (CONTRACTS[col.contract].law if col.contract in CONTRACTS else "")
        out.append(f"- **{col.title}**: `{col.contract}`: {law}" + (f" Here: {col.note}." if col.note else ""))
    return out


def _md_cell(cell: LawCell) -> str:
    if cell.state != "declared":
        return cell.state
    parts = []
    for m in cell.marks:
        text = words(m)
        parts.append(f"[{text}](#{m.anchor})" if m.evidence else text)
    return " / ".join(parts)


def markdown(table: LawTable) -> list[str]:
    """The report's section (Markdown lines): the table, its legend and the counterexamples it links to."""
    if not table.operators:
        return []
    cols = table.columns
    lines = ["## Normaliser law table", "", _rows_line(table), "",
             "| operator | " + " | ".join(c.title for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for op in table.operators:
        lines.append(f"| `{op}` | " + " | ".join(_md_cell(table.cell(op, c)).replace("|", "/") for c in cols)
                     + " |")
    lines += ["", "Columns:", ""] + legend(table) + [""]
    if table.evidence:
        lines += ["Counterexamples of the table:", ""]
        lines += [f'- <a id="{m.anchor}"></a>`{m.row}` ({m.tier}, {words(m)}): {m.evidence.replace(chr(10), " ")}'
                  for m in table.evidence] + [""]
    return lines


PASSED = (V.Outcome.PROVED, V.Outcome.HOLDS, V.Outcome.SAMPLED)     # an "ok" cell: every tier passed


def _html_class(cell: LawCell) -> str:
    if cell.state != "declared":
        return "na"
    outs = [m.outcome for m in cell.marks]
    if any(m.failing for m in cell.marks):
        return "bad"
    if all(o in PASSED for o in outs):
        return "ok"
    if all(o == V.Outcome.EXPECTED for o in outs):
        return "exp"
    return "unk"


def _html_cell(cell: LawCell, inline) -> str:
    if cell.state != "declared":
        return f'<td class="na">{escape(cell.state)}</td>'
    parts = [f'<a href="#{m.anchor}">{inline(words(m))}</a>' if m.evidence else inline(words(m)) for m in cell.marks]
    tip = f"{cell.marks[0].row}: {cell.declared}; " + "; ".join(f"{m.tier}: {m.outcome}" for m in cell.marks)
    return f'<td class="{_html_class(cell)}" title="{escape(tip)}">{" / ".join(parts)}</td>'


def html(table: LawTable, inline=escape) -> str:
    """The HTML report's section (``inline`` renders the legend's inline Markdown marks)."""
    if not table.operators:
        return ""
    head = "".join(f"<th>{escape(c.title)}</th>" for c in table.columns)
    body = "".join(f'<tr><th class="op">{escape(op)}</th>'
                   + "".join(_html_cell(table.cell(op, c), inline) for c in table.columns) + "</tr>"
                   for op in table.operators)
    items = "".join(f"<li>{inline(line[2:])}</li>" for line in legend(table))
    ces = "".join(f'<li id="{m.anchor}"><code>{escape(m.row)}</code> ({escape(m.tier)}, {inline(words(m))}): '
                  f'<span class="ce">{inline(m.evidence)}</span></li>' for m in table.evidence)
    return (f'<h2>Normaliser law table</h2><p>{inline(_rows_line(table))}</p>'
            f'<div class="wrap"><table id="lawtable"><tr><th class="op">operator</th>{head}</tr>{body}</table></div>'
            f'<p>Columns:</p><ul id="lawtable-columns">{items}</ul>'
            + (f'<p>Counterexamples of the table:</p><ul id="lawtable-evidence">{ces}</ul>' if ces else ""))


def _readme_cell(cell: LawCell) -> str:
    if cell.state != "declared":
        return STATE_SYMBOL[cell.state]
    return "/".join(symbol(m) for m in cell.marks)


def readme(table: LawTable, sources: list[str]) -> str:
    """The README's compact block: symbols, one legend line, where the verdicts came from (``sources``: the
    record's paths as the README names them)."""
    lines = ["| operator | " + " | ".join(c.short for c in COLUMNS) + " |", "|---|" + ":-:|" * len(COLUMNS)]
    lines += [f"| `{op}` | " + " | ".join(_readme_cell(table.cell(op, c)) for c in COLUMNS) + " |"
              for op in table.operators]
    missing = ", ".join(c.title for c in COLUMNS if c.contract is None)
    lines += ["", f"{SYMBOL_LEGEND}. Verdicts of the recorded run ({' + '.join(table.tiers)}); each column's "
                  f"contract and every counterexample: `tokenlaw report lawtable {' '.join(sources)}`"
                  + (f"; no contract yet for {missing}" if missing else "") + "."]
    return "\n".join(lines)


BEGIN = "<!-- law table: begin (tokenlaw report lawtable --readme README.md renders the record; do not edit) -->"
END = "<!-- law table: end -->"


def splice(page: str, block: str) -> str:
    """``page`` with the text between :data:`BEGIN` and :data:`END` replaced by ``block``."""
    return marked_block.splice(page, block, BEGIN, END, "--readme")


def generated(page: str) -> str:
    """The block between the markers of ``page`` (what :func:`splice` wrote)."""
    return marked_block.between(page, BEGIN, END, "--readme")
