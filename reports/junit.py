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

from .document import Document, ratio
from .text import example


def _case(row: dict, cell: dict) -> tuple[str, str]:
    """(kind, body) for one cell: kind is 'pass', 'failure' or 'skipped'."""
    v = cell["verdict"]
    if v is None:
        return "skipped", "not run"
    out = cell["outcome"]      # computed once, by Document.to_json
    status = v["status"]
    if out == V.Outcome.UNEXPECTED:
        return "failure", (f"UNEXPECTED violation of claimed contract {row['contract']} ({row['law']}): "
                           f"{v.get('detail', '')}; counterexample {example(v.get('counterexample'))}"
                           + (f"; replay: {v['replay']}" if v.get("replay") else ""))
    if out == V.Outcome.NOT_REPRODUCED:
        if row["outcome"] == V.Outcome.NOT_REPRODUCED:
            return "failure", (f"expected violation of {row['contract']} NOT reproduced in any dtype "
                               f"({v['examples']} examples; declared reason: {row['reason']})")
        # Another dtype reproduces it (e.g. rounding hides it here): the row is fine.
        return "pass", ""
    if out in V.UNDECIDED | V.NOT_RUN | {V.Outcome.NOT_APPLICABLE_BY_DESIGN}:
        return "skipped", f"{status}: {v.get('detail', '')}"
    return "pass", ""


def junit(document: Document) -> str:
    """The report as a JUnit XML string (deterministic: cell times come from the verdicts)."""
    doc = document.stable_json()
    suites: dict[str, list] = {}
    for row in doc["rows"]:
        for cell in row["cells"]:
            suites.setdefault(row["operator"], []).append((row, cell))
    total = {"tests": 0, "failures": 0, "skipped": 0}
    parts = []
    for op, items in suites.items():
        cases, counts = [], {"failure": 0, "skipped": 0}
        for row, cell in items:
            kind, body = _case(row, cell)
            v = cell["verdict"] or {}
            props = (f'<properties><property name="declared" value={quoteattr(str(row["declared"]))}/>'
                     f'<property name="outcome" value={quoteattr(cell.get("outcome", ""))}/>'
                     f'<property name="ratio" value={quoteattr(f"{ratio(v):.3e}" if v else "")}/></properties>')
            # time only when the document carries timings (written reports do not: they are deterministic)
            timed = f' time="{float(v["seconds"]):.3f}"' if "seconds" in v else ""
            head = (f'  <testcase classname={quoteattr("tokenlaw." + op)} name={quoteattr(cell["id"])}'
                    f'{timed}>{props}')
            if kind == "failure":
                counts["failure"] += 1
                head += f'<failure message={quoteattr(body[:200])}>{escape(body)}</failure>'
            elif kind == "skipped":
                counts["skipped"] += 1
                head += f'<skipped message={quoteattr(body[:200])}/>'
            cases.append(head + "</testcase>")
        total["tests"] += len(items)
        total["failures"] += counts["failure"]
        total["skipped"] += counts["skipped"]
        parts.append(f' <testsuite name={quoteattr("tokenlaw." + op)} tests="{len(items)}" '
                     f'failures="{counts["failure"]}" errors="0" skipped="{counts["skipped"]}">\n'
                     + "\n".join(cases) + "\n </testsuite>")
    head = (f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="tokenlaw" tests="{total["tests"]}" '
            f'failures="{total["failures"]}" errors="0" skipped="{total["skipped"]}">')
    return head + "\n" + "\n".join(parts) + "\n</testsuites>\n"
