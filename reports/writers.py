"""Report writers: the same rows rendered as Markdown and JSON, written atomically."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from tokenlaw.properties import verdict as V
from tokenlaw.properties.catalogue import CONTRACTS

SCHEMA_VERSION = 1


def atomic_write(path: Path, text: str):
    """Write via a temporary file and rename: a crash never leaves half a report."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def to_json(rows, meta: dict) -> dict:
    return {
        "schema": SCHEMA_VERSION,
        "meta": meta,
        "rows": [
            {"id": r.id, "operator": r.operator, "contract": r.contract, "law": CONTRACTS[r.contract].law,
             "exact": CONTRACTS[r.contract].exact, "declared": r.declared, "reason": r.reason,
             "outcome": r.outcome,
             "cells": [{"id": c.id, "backend": c.backend, "dtype": c.dtype,
                        "verdict": None if c.verdict is None else c.verdict.to_json()} for c in r.cells]}
            for r in rows
        ],
    }


def _fmt(x) -> str:
    return f"{x:.2e}" if isinstance(x, float) else str(x)


def _example(v: V.Verdict) -> str:
    ce = v.counterexample or {}
    keys = ("n", "batch", "d", "null", "pos", "seed", "shift", "mask_density", "perm_seed")
    return ", ".join(f"{k}={ce[k]}" for k in keys if k in ce)


def to_markdown(rows, meta: dict) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    failing = [r for r in rows if r.failing]
    ops = list(dict.fromkeys(r.operator for r in rows))
    names = list(dict.fromkeys(r.contract for r in rows))
    lines = ["# tokenlaw conformance report", ""]
    lines.append(f"**{'PASS' if not failing else 'FAIL'}** - {len(rows)} declared (operator, contract) rows; "
                 + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".")
    lines.append("")
    lines.append(f"Tier: {meta.get('tier', 'fuzz')} (backend {meta.get('backend')}), profile `{meta.get('profile')}` "
                 f"({meta.get('examples')} examples per cell per dtype), seed {meta.get('seed')}, "
                 f"torch {meta.get('torch')}, {meta.get('seconds', 0):.0f} s.")
    lines.append("")
    blocked = not_runnable_cells(rows)
    if blocked:
        lines += ["## Cells not runnable here", ""]
        lines += [f"- `{c.id}`: {c.verdict.detail}" for c in blocked]
        lines.append("")
    if failing:
        lines += ["## Failing rows", ""]
        for r in failing:
            lines.append(f"- `{r.id}`: {r.outcome} - {r.reason}")
        lines.append("")
    lines += ["## How to read this", "",
              "Each row is an operator and a contract it declares: **claims** (the law must hold in every dtype) "
              "or **violates** (the suite must reproduce the violation). Outcomes: `holds` / `proved`, "
              "`expected violation reproduced`, `UNEXPECTED violation`, `expected violation NOT reproduced`, "
              "`unknown` (never counted as proved), `not runnable here`. Exact contracts compare bit-for-bit; the "
              "others use the derived bound of `tokenlaw.properties.tolerance` (each side's own error against "
              "float64, plus float64's estimated slack). `max disc/bound` is the worst ratio seen (<= 1 holds).", ""]
    lines += ["## Matrix", "", "| operator | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    short = {V.OK_HOLDS: "holds", V.OK_PROVED: "proved", V.OK_EXPECTED: "violated (expected)",
             V.BAD_UNEXPECTED: "**UNEXPECTED**", V.BAD_NOT_REPRODUCED: "**NOT reproduced**",
             V.OUT_UNKNOWN: "unknown", V.OUT_NOT_RUNNABLE: "not runnable", V.NOT_APPLICABLE: "-"}
    by = {(r.operator, r.contract): r for r in rows}
    for op in ops:
        cells = [short[by[(op, n)].outcome] if (op, n) in by else "-" for n in names]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines += ["", "## Rows", "",
              "| row | declared | outcome | dtypes: examples, max disc/bound | time | minimal counterexample |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        parts, secs, ce = [], 0.0, ""
        for c in r.cells:
            v = c.verdict
            if v is None:
                continue
            secs += v.seconds
            tag = "VIOLATED " if v.violated else ""
            parts.append(f"{c.dtype}: {tag}{v.examples} ex, {_fmt(v.ratio)}")
            if v.violated and not ce:
                ce = f"{c.dtype}: {_example(v)}; {v.detail}"
                if v.replay:
                    ce += f" (replay `{v.replay}`)"
        lines.append(f"| `{r.id}` | {r.declared} | {r.outcome} | {'; '.join(parts)} | {secs:.1f}s | {ce.replace('|', '/')} |")
    lines += ["", "## Contracts", ""]
    for n in names:
        c = CONTRACTS[n]
        lines.append(f"- `{n}` ({'exact' if c.exact else 'tolerance'}): {c.law}")
    lines.append("")
    return "\n".join(lines)


def not_runnable_cells(rows) -> list:
    """Cells whose verdict is 'not runnable here' (with the reason in ``verdict.detail``)."""
    return [c for r in rows for c in r.cells if c.verdict is not None and c.verdict.status == V.NOT_RUNNABLE]


def write(rows, meta: dict, out_dir: Path, stem: str = "conformance") -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    md, js = out_dir / f"{stem}.md", out_dir / f"{stem}.json"
    atomic_write(js, json.dumps(to_json(rows, meta), indent=1, sort_keys=False) + "\n")
    atomic_write(md, to_markdown(rows, meta))
    return md, js
