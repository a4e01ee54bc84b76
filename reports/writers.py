"""Report writers: one set of rows rendered as JSON, Markdown, JUnit XML and HTML, written atomically.

The JSON document (:func:`to_json`, schema in ``docs/report-schema.md``) is
the single source: every other format renders from it, so a saved report
can be re-rendered and two reports can be compared field by field.  Output
is deterministic for the same seed: timings (the fields listed under
``VOLATILE``) are written to a separate ``<stem>.timings.json`` and every
other file is byte-identical between two runs of the same code, seed,
profile and scope.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tokenlaw.operators.files import atomic_write  # noqa: F401  (re-exported: the one atomic writer)
from tokenlaw.properties import verdict as V
from tokenlaw.properties.case import Case
from tokenlaw.properties.catalogue import CONTRACTS

# Additive fields keep the version; a removed or renamed field bumps it.
SCHEMA_VERSION = 1

# Fields that differ between two runs of the same seed (wall-clock times).
VOLATILE = ("meta.seconds", "meta.created", "meta.runs[].seconds", "meta.runs[].created",
            "rows[].cells[].verdict.seconds")

FORMATS = ("json", "md", "xml", "html")


def to_json(rows, meta: dict) -> dict:
    """The report document: schema version, run meta, a summary and every row with its cells."""
    out_rows = []
    for r in rows:
        cells = []
        for c in r.cells:
            cells.append({"id": c.id, "backend": c.backend, "dtype": c.dtype,
                          "outcome": V.outcome(r.declared, c.verdict),
                          "verdict": None if c.verdict is None else c.verdict.to_json()})
        out_rows.append({"id": r.id, "operator": r.operator, "contract": r.contract,
                         "law": CONTRACTS[r.contract].law, "exact": CONTRACTS[r.contract].exact,
                         "declared": r.declared, "reason": r.reason, "outcome": r.outcome, "cells": cells})
    return {"schema": SCHEMA_VERSION, "meta": dict(meta), "summary": summary(out_rows), "rows": out_rows}


def summary(rows: list[dict]) -> dict:
    """Counts of row outcomes, the failing row ids and the overall PASS/FAIL.

    Rows and cells *not applicable by design* are counted apart (``by_design``) and kept out
    of ``outcomes``, ``rows`` and ``cells``: they are not results.
    """
    counts: dict[str, int] = {}
    judged = [r for r in rows if r["outcome"] != V.OUT_BY_DESIGN]
    for r in judged:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    failing = [r["id"] for r in rows if r["outcome"] in V.FAILING]
    by_design = [c for r in rows for c in r["cells"] if _status(c) == V.BY_DESIGN]
    return {"result": "FAIL" if failing else "PASS", "rows": len(judged),
            "cells": sum(len(r["cells"]) for r in rows) - len(by_design),
            "outcomes": dict(sorted(counts.items())), "failing": failing,
            "by_design": {"rows": len(rows) - len(judged), "cells": len(by_design)}}


def _status(cell: dict) -> str | None:
    return (cell.get("verdict") or {}).get("status")


def by_reason(rows: list[dict], status: str) -> dict:
    """{reason: [cell ids]} of the cells with ``status`` (not runnable / by design), each reason once."""
    out: dict[str, list] = {}
    for r in rows:
        for c in r["cells"]:
            if _status(c) == status:
                out.setdefault(c["verdict"].get("detail", ""), []).append(c["id"])
    return out


def by_design(rows: list[dict]) -> dict:
    """{reason: [cell ids]} of the cells not applicable by design."""
    return by_reason(rows, V.BY_DESIGN)


def headline(summ: dict) -> str:
    """'156 rows, 452 cells: 38 expected violation reproduced, 115 holds' (by-design cells apart)."""
    return (f"{summ['rows']} declared (operator, contract) rows, {summ['cells']} cells judged; "
            + ", ".join(f"{n} {k}" for k, n in summ["outcomes"].items()))


def stable(doc: dict) -> dict:
    """A copy of a report document without its VOLATILE (timing) fields: equal for equal seeds."""
    doc = json.loads(json.dumps(doc))
    meta = doc.get("meta", {})
    for m in [meta, *meta.get("runs", ())]:     # a merged document keeps each run's meta
        for k in ("seconds", "created"):
            m.pop(k, None)
    for r in doc.get("rows", ()):
        for c in r.get("cells", ()):
            if c.get("verdict"):
                c["verdict"].pop("seconds", None)
    return doc


def _fmt(x) -> str:
    return f"{x:.2e}" if isinstance(x, float) else str(x)


def ratio(v: dict) -> float:
    """discrepancy / bound of a JSON verdict (same rule as Verdict.ratio)."""
    d, b = _num(v.get("discrepancy", 0.0)), _num(v.get("bound", 0.0))
    if d == 0:
        return 0.0
    return float("inf") if b == 0 else d / b


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) else float(str(x))   # "nan" / "inf" strings


ALWAYS_SHOWN = ("n", "batch", "d", "seed")
FIELD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Case)
                  if not f.name.startswith("_") and f.default is not dataclasses.MISSING}


def _differs(value, default) -> bool:
    if isinstance(default, tuple):
        return list(value or ()) != list(default)
    return value != default


def example(ce: dict | None) -> str:
    """The drawn choices of a counterexample: its sizes and seed, then every field that differs from its default.

    'n=2, batch=1, d=4, seed=3, null=[0], bias_scale=10000.0, mask_kind=padding, tau=0.5': the
    fields that decided the failure are never left out.
    """
    ce = ce or {}
    keys = [k for k in ALWAYS_SHOWN if k in ce]
    keys += [k for k, d in FIELD_DEFAULTS.items() if k in ce and k not in ALWAYS_SHOWN and _differs(ce[k], d)]
    return ", ".join(f"{k}={ce[k]}" for k in keys)


SHORT = {V.OK_HOLDS: "holds", V.OK_PROVED: "proved", V.OK_EXPECTED: "violated (expected)",
         V.BAD_UNEXPECTED: "**UNEXPECTED**", V.BAD_NOT_REPRODUCED: "**NOT reproduced**",
         V.OUT_UNKNOWN: "unknown", V.OUT_NOT_RUNNABLE: "not runnable", V.OUT_BY_DESIGN: "n/a",
         V.NOT_APPLICABLE: "-", V.OK_SAMPLED: "holds (sampled weights)", V.OUT_VACUOUS: "vacuous",
         V.OUT_NOT_TRACEABLE: "not traceable"}

HOW_TO_READ = (
    "Each row is an operator and a contract it declares: **claims** (the law must hold in every dtype) "
    "or **violates** (the suite must reproduce the violation). Outcomes: `holds` / `proved`, "
    "`expected violation reproduced`, `UNEXPECTED violation`, `expected violation NOT reproduced`, "
    "`unknown` (never counted as proved), `not runnable here` (this machine cannot run it: the reason is "
    "listed), `not applicable by design` (the contract itself excludes the cell, e.g. the eager float32 "
    "differential cell whose float32 run is the error probe; counted apart, listed once); from the symbolic "
    "tier also `holds for sampled weights` (proved only with the weights fixed to one drawn sample: a pass, "
    "never `proved`), `vacuous` (no enumerated input met the premises: nothing was checked) and `not "
    "symbolically traceable` (the code does something z3/sympy cannot model soundly; file:line given). "
    "`proved` means z3 showed the law for every real input and parameter over the declared domain at the "
    "stated shapes (`tokenlaw docs symbolic`). Exact contracts compare bit-for-bit; the "
    "others use the derived bound of `tokenlaw.properties.tolerance` (each side's own error against "
    "float64, plus float64's estimated slack). `max disc/bound` is the worst ratio seen (<= 1 holds). "
    "The operators' formulas, the contracts' laws and the tolerance model are printed by "
    "`tokenlaw docs mathematics` and `tokenlaw docs laws`; a stored counterexample replays with "
    "`tokenlaw replay ID`.")


def run_line(meta: dict) -> str:
    """One sentence naming how the run was made (no timings: see VOLATILE)."""
    return (f"Tier: {meta.get('tier', 'fuzz')} (backend {meta.get('backend')}), profile `{meta.get('profile')}` "
            f"({meta.get('examples')} examples per cell per dtype), seed {meta.get('seed')}, "
            f"torch {meta.get('torch')}.")


def first_counterexample(row: dict) -> str:
    for c in row["cells"]:
        v = c["verdict"]
        if v and v["status"] in (V.VIOLATED, V.REFUTED):
            ce = f"{c['dtype']}: {example(v.get('counterexample'))}; {v.get('detail', '')}"
            return ce + (f" (replay: `tokenlaw replay {v['replay']}`)" if v.get("replay") else "")
    return ""


def markdown(doc: dict) -> str:
    """Markdown: the verdict and failing rows first, then the matrix, the rows and the contracts."""
    rows, meta, summ = doc["rows"], doc["meta"], doc.get("summary") or summary(doc["rows"])
    ops = list(dict.fromkeys(r["operator"] for r in rows))
    names = list(dict.fromkeys(r["contract"] for r in rows))
    lines = ["# tokenlaw conformance report", ""]
    lines.append(f"**{summ['result']}** - {headline(summ)}.")
    lines += ["", run_line(meta), ""]
    byid = {r["id"]: r for r in rows}
    if summ["failing"]:
        lines += ["## Failing rows", ""]
        for rid in summ["failing"]:
            r = byid[rid]
            ce = first_counterexample(r)
            lines.append(f"- `{rid}`: {r['outcome']} - {r['reason']}" + (f"; counterexample {ce}" if ce else ""))
        lines.append("")
    blocked = by_reason(rows, V.NOT_RUNNABLE)
    if blocked:
        lines += ["## Cells not runnable here", ""]
        lines += [f"- {reason} ({len(ids)} cells): " + ", ".join(f"`{i}`" for i in ids) for reason, ids in blocked.items()]
        lines.append("")
    designed = by_design(rows)
    if designed:
        n = sum(len(ids) for ids in designed.values())
        lines += ["<details><summary>" + f"{n} cells not applicable by design (not counted above)" + "</summary>", ""]
        for reason, ids in designed.items():
            lines.append(f"- {reason}: " + ", ".join(f"`{i}`" for i in ids))
        lines += ["", "</details>", ""]
    lines += ["## How to read this", "", HOW_TO_READ, ""]
    lines += ["## Matrix", "", "| operator | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    by = {(r["operator"], r["contract"]): r for r in rows}
    for op in ops:
        cells = [SHORT[by[(op, n)]["outcome"]] if (op, n) in by else "-" for n in names]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines += ["", "## Rows", "",
              "| row | declared | outcome | dtypes: examples, max disc/bound | minimal counterexample |",
              "|---|---|---|---|---|"]
    for r in rows:
        parts = []
        for c in r["cells"]:
            v = c["verdict"]
            if v is None:
                continue
            tag = "VIOLATED " if v["status"] in (V.VIOLATED, V.REFUTED) else ""
            tag += "" if v["status"] in (V.HOLDS, V.VIOLATED) else f"{v['status']} "
            parts.append(f"{c['dtype']}{'' if c['backend'] == 'eager' else '/' + c['backend']}: "
                         f"{tag}{v['examples']} ex, {_fmt(ratio(v))}")
        ce = first_counterexample(r)
        lines.append(f"| `{r['id']}` | {r['declared']} | {r['outcome']} | {'; '.join(parts)} | {ce.replace('|', '/')} |")
    lines += ["", "## Contracts", ""]
    for n in names:
        c = CONTRACTS.get(n)
        law = c.law if c else next(r["law"] for r in rows if r["contract"] == n)
        exact = c.exact if c else next(r["exact"] for r in rows if r["contract"] == n)
        lines.append(f"- `{n}` ({'exact' if exact else 'tolerance'}): {law}")
    lines.append("")
    return "\n".join(lines)


def to_markdown(rows, meta: dict) -> str:
    """Markdown report of planned-and-run rows (see :func:`markdown`)."""
    return markdown(to_json(rows, meta))


def render(doc: dict, fmt: str) -> str:
    """The report document rendered in one of FORMATS."""
    if fmt == "json":
        return json.dumps(doc, indent=1, sort_keys=False) + "\n"
    if fmt == "md":
        return markdown(doc)
    if fmt == "xml":
        from .junit import junit

        return junit(doc)
    if fmt == "html":
        from .html import html

        return html(doc)
    raise ValueError(f"fmt: expected one of {FORMATS}, got {fmt!r}")


def not_runnable_cells(rows) -> list:
    """Cells whose verdict is 'not runnable here' (with the reason in ``verdict.detail``)."""
    return [c for r in rows for c in r.cells if c.verdict is not None and c.verdict.status == V.NOT_RUNNABLE]


def timings(doc: dict) -> dict:
    """The VOLATILE fields of a document: the run's seconds and each cell's."""
    meta = doc.get("meta", {})
    return {"schema": SCHEMA_VERSION, "seconds": meta.get("seconds"),
            "runs": [r.get("seconds") for r in meta.get("runs", ())],
            "cells": {c["id"]: c["verdict"].get("seconds") for r in doc.get("rows", ()) for c in r["cells"]
                      if c.get("verdict") and "seconds" in c["verdict"]}}


def write_doc(doc: dict, out_dir: Path, stem: str = "conformance", formats=FORMATS) -> dict:
    """Write the document in every format to ``out_dir/stem.<fmt>``; returns {fmt: path}.

    Every format is written from the timing-free document (:func:`stable`), so the files are
    byte-identical for a seed; the timings go to ``stem.timings.json`` alone.
    """
    out_dir = Path(out_dir)
    paths = {}
    det = stable(doc)
    for fmt in formats:
        paths[fmt] = out_dir / f"{stem}.{fmt}"
        atomic_write(paths[fmt], render(det, fmt))
    paths["timings"] = out_dir / f"{stem}.timings.json"
    atomic_write(paths["timings"], json.dumps(timings(doc), indent=1) + "\n")
    return paths


def write_all(rows, meta: dict, out_dir: Path, stem: str = "conformance") -> dict:
    """Write rows as conformance.{json,md,xml,html}; returns {fmt: path}."""
    return write_doc(to_json(rows, meta), out_dir, stem)


def write(rows, meta: dict, out_dir: Path, stem: str = "conformance") -> tuple[Path, Path]:
    """Write every format; returns the (Markdown, JSON) paths (the original interface)."""
    paths = write_all(rows, meta, out_dir, stem)
    return paths["md"], paths["json"]
