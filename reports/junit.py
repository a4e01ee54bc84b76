"""JUnit XML view of a report document: one testcase per cell, so CI shows per-cell results.

A cell *fails* when its row fails (an UNEXPECTED violation, or an expected
violation NOT reproduced in any dtype) and the cell is part of the reason; it
is *skipped* when it could not be judged here (not runnable, or unknown:
never counted as passed); every other cell passes.  Test suites are the
operators, test names the cell ids (``oattention-null_receiver-eager-float32``).
"""
from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import Cell, Row

from .document import Document
from .text import example


def _case(document: Document, row: Row, cell: Cell) -> tuple[str, str]:
    """(kind, body) for one cell: kind is 'pass', 'failure' or 'skipped'."""
    v = cell.verdict
    if v is None:
        return "skipped", "not run"
    out = V.outcome(row.declared, v)
    if out == V.Outcome.UNEXPECTED:
        return "failure", (f"UNEXPECTED violation of claimed contract {row.contract} ({document.law(row.contract)[0]}): "
                           f"{v.written_detail}; counterexample {example(v.counterexample)}"
                           + (f"; replay: {v.replay}" if v.replay else ""))
    if out == V.Outcome.NOT_REPRODUCED:
        if row.outcome == V.Outcome.NOT_REPRODUCED:
            return "failure", (f"expected violation of {row.contract} NOT reproduced in any dtype "
                               f"({v.examples} examples; declared reason: {row.reason})")
        # Another dtype reproduces it (e.g. rounding hides it here): the row is fine.
        return "pass", ""
    if out in V.UNDECIDED | V.NOT_RUN | {V.Outcome.NOT_APPLICABLE_BY_DESIGN}:
        return "skipped", f"{v.status}: {v.written_detail}"
    return "pass", ""


def junit(document: Document) -> str:
    """The report as a JUnit XML string (deterministic: no cell times, as the written reports carry none)."""
    suites: dict[str, list] = {}
    for row in document.rows:
        for cell in row.cells:
            suites.setdefault(row.operator, []).append((row, cell))
    tests = failures = skipped = 0
    parts = []
    for op, items in suites.items():
        cases, failed, skips = [], 0, 0
        for row, cell in items:
            kind, body = _case(document, row, cell)
            v = cell.verdict
            outcome = V.outcome(row.declared, v)
            props = (f'<properties><property name="declared" value={quoteattr(str(row.declared))}/>'
                     f'<property name="outcome" value={quoteattr(outcome)}/>'
                     f'<property name="ratio" value={quoteattr(f"{v.ratio:.3e}" if v is not None else "")}/>'
                     '</properties>')
            head = f'  <testcase classname={quoteattr("tokenlaw." + op)} name={quoteattr(cell.id)}>{props}'
            if kind == "failure":
                failed += 1
                head += f'<failure message={quoteattr(body[:200])}>{escape(body)}</failure>'
            elif kind == "skipped":
                skips += 1
                head += f'<skipped message={quoteattr(body[:200])}/>'
            cases.append(head + "</testcase>")
        tests, failures, skipped = tests + len(items), failures + failed, skipped + skips
        parts.append(f' <testsuite name={quoteattr("tokenlaw." + op)} tests="{len(items)}" '
                     f'failures="{failed}" errors="0" skipped="{skips}">\n'
                     + "\n".join(cases) + "\n </testsuite>")
    head = (f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="tokenlaw" tests="{tests}" '
            f'failures="{failures}" errors="0" skipped="{skipped}">')
    return head + "\n" + "\n".join(parts) + "\n</testsuites>\n"
