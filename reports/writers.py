"""The conformance report's renderers (Markdown; JUnit XML and HTML live beside it) and the interrupted-run marker.

Every renderer takes a :class:`~.document.Document`; the registry of formats
and the one writer are :mod:`.formats` (``formats.write(doc, out, formats)``).
Output is deterministic for the same seed: the timings (the fields listed
under ``VOLATILE``) are written to a separate ``<stem>.timings.json`` and every
other file is byte-identical between two runs of the same code, seed, profile
and scope.
"""
from __future__ import annotations

import json
from pathlib import Path

from tokenlaw.process.files import atomic_write  # noqa: F401  (re-exported: the one atomic writer)
from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS

from .document import SCHEMA_VERSION, VOLATILE, Document, ratio, stable, timings  # noqa: F401
from . import lawtable
from .text import (HOW_TO_READ, SHORT, by_design, by_reason, claimed_line, counted, example,  # noqa: F401
                   first_counterexample, headline, interrupted_line, limit_legend, limits, replay_command, rows_word,
                   run_line, searched)

def _fmt(x) -> str:
    return f"{x:.2e}" if isinstance(x, float) else str(x)


def markdown(document: Document, also=()) -> str:
    """Markdown: the verdict and failing rows first, then the matrix, the law table, the rows and the contracts.

    ``also``: the Documents of other tiers run on the same selection (``verify``'s proofs), whose
    verdicts the law table shows beside this document's."""
    rows, meta, summ, st = document.rows, document.meta, document.summary(), document.standing()
    ops = list(dict.fromkeys(r.operator for r in rows))
    names = list(dict.fromkeys(r.contract for r in rows))
    lines = ["# tokenlaw conformance report", ""]
    lines.append(f"**{st.result}** - {headline(summ)}.")
    lines += ["", run_line(meta), ""]
    if interrupted_line(meta):
        lines += [f"**{interrupted_line(meta)}**", ""]
    byid = {r.id: r for r in rows}
    if st.failing:
        lines += ["## Failing rows", ""]
        for rid in st.failing:
            r = byid[rid]
            ce = first_counterexample(r, meta)
            lines.append(f"- `{rid}`: {r.outcome} - {r.reason}" + (f"; counterexample {ce}" if ce else ""))
        lines.append("")
    if st.undecided:
        lines += ["## Undecided claimed rows (why this run is not a PASS)", ""]
        lines += [f"- `{rid}`: {byid[rid].outcome} - {byid[rid].reason}" for rid in st.undecided] + [""]
    blocked = by_reason(rows, V.Status.NOT_RUNNABLE)
    if blocked:
        lines += ["## Cells not runnable here", ""]
        lines += [f"- {reason} ({counted(len(ids), 'cell')}): " + ", ".join(f"`{i}`" for i in ids) for reason, ids in blocked.items()]
        lines.append("")
    designed = by_design(rows)
    if designed:
        n = sum(len(ids) for ids in designed.values())
        lines += ["<details><summary>" + f"{counted(n, 'cell')} not applicable by design (not counted above)"
                  + "</summary>", ""]
        for reason, ids in designed.items():
            lines.append(f"- {reason}: " + ", ".join(f"`{i}`" for i in ids))
        lines += ["", "</details>", ""]
    lines += ["## How to read this", "", HOW_TO_READ, ""]
    legend = limit_legend(rows)
    if legend:
        lines += ["### Declared limits", "",
                  "The fuzz tier draws each dtype's whole range except where an operator's `Domain` declares a "
                  "limit (`Domain(limits=...)`), each with the reason the computation is not representable there:",
                  ""] + legend + [""]
    lines += ["## Matrix", "", "| operator | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    by = {(r.operator, r.contract): r for r in rows}
    for op in ops:
        cells = [SHORT[by[(op, n)].outcome] if (op, n) in by else "-" for n in names]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines += [""] + lawtable.markdown(lawtable.in_report(lawtable.build([document, *also])))
    lines += ["## Rows", "",
              "| row | declared | outcome | dtypes: examples, max disc/bound | searched (n, d, batch, heads; limits) "
              "| minimal counterexample |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        parts = []
        for c in r.cells:
            v = c.verdict
            if v is None:
                continue
            tag = "VIOLATED " if v.status in (V.Status.VIOLATED, V.Status.REFUTED) else ""
            tag += "" if v.status in (V.Status.HOLDS, V.Status.VIOLATED) else f"{v.status} "
            parts.append(f"{c.dtype}{'' if c.backend == 'eager' else '/' + c.backend}: "
                         f"{tag}{v.examples} ex, {_fmt(v.ratio)}")
        ce = first_counterexample(r, meta)
        shapes = "; ".join([searched(r)] + [f"{dt}: {text.split(' (')[0]}" for dt, text in limits(r).items()])
        shapes = shapes.strip("; ").replace("|", "\\|")
        lines.append(f"| `{r.id}` | {r.declared} | {r.outcome} | {'; '.join(parts)} | {shapes} "
                     f"| {ce.replace('|', '/')} |")
    lines += ["", "## Contracts", ""]
    for n in names:
        c = CONTRACTS.get(n)
        law, exact = (c.law, c.exact) if c else document.law(n)
        lines.append(f"- `{n}` ({'exact' if exact else 'tolerance'}): {law}")
    lines.append("")
    return "\n".join(lines)


def not_runnable_cells(rows) -> list:
    """Cells whose verdict is 'not runnable here' (with the reason in ``verdict.detail``)."""
    return [c for r in rows for c in r.cells if c.verdict is not None and c.verdict.status == V.Status.NOT_RUNNABLE]


def interrupted_marker(out_dir: Path, stem: str = "conformance") -> Path:
    """``stem.INTERRUPTED.txt``: present while the reports beside it are older than a run that was stopped."""
    return Path(out_dir) / f"{stem}.INTERRUPTED.txt"


def mark_interrupted(out_dir: Path, stem: str, command: str) -> Path | None:
    """After an interrupted run: say, beside any earlier reports in ``out_dir``, that they are not its results.

    Nothing is written where no earlier report exists (there is nothing to mistake for the run's)."""
    out_dir = Path(out_dir)
    if not any(out_dir.glob(f"{stem}.*")):
        return None
    marker = interrupted_marker(out_dir, stem)
    atomic_write(marker, f"{command} was interrupted before it finished: the {stem}.* reports in this folder "
                         "are from an earlier run, not from it.\n")
    return marker


def timings_script(times: dict) -> str:
    """``stem.timings.js``: fills the HTML page's wall time from the run's timings (a script a file:// page
    may load, unlike a JSON fetch)."""
    seconds = times.get("seconds")
    text = "unknown" if not isinstance(seconds, (int, float)) else (
        f"{seconds:.1f} s" if seconds < 120 else f"{int(seconds // 60)} min {seconds % 60:.0f} s")
    return ("(function () { var e = document.getElementById('wall-time'); if (e) e.textContent = "
            + json.dumps(text) + "; })();\n")
