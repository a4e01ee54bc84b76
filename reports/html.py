"""Self-contained HTML view of a report document: summary, matrix, plots of the verdicts' own numbers.

Everything is inline (CSS, SVG charts from :mod:`.svgplot`, a few lines of
script that only record render errors), so the page opens from a file, in
CI artefacts or offline.  The plots are drawn from the verdicts:

* discrepancy against bound per dtype, one point per tolerance cell (exact
  contracts have bound 0 and are counted, not plotted);
* the closure per-layer chart, for cells whose verdict's ``extra`` carries
  ``layers`` (a list of ``{layer, old_shift, null_norm, bound}``);
* tau sweeps, for cells whose verdict's ``extra`` carries ``tau_sweep`` (a list
  of ``{"tau": t, metric: value, ...}``).
"""
from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape

import numpy as np

from tokenlaw.operators import dtypes as _dtypes
from tokenlaw.properties import verdict as V

from . import lawtable
from .svgplot import PALETTE, Series, chart
from .document import Document
from .meta import Meta
from .text import (HOW_TO_READ, by_design, by_reason, counted, first_counterexample, headline, interrupted_line,
                   run_line)

CLASS = {V.Outcome.HOLDS: "ok", V.Outcome.PROVED: "ok", V.Outcome.EXPECTED: "exp", V.Outcome.UNEXPECTED: "bad",
         V.Outcome.NOT_REPRODUCED: "bad", V.Outcome.UNKNOWN: "unk", V.Outcome.NOT_RUNNABLE: "unk",
         V.Outcome.NOT_APPLICABLE_BY_DESIGN: "na", V.Outcome.UNDECLARED: "na", V.Outcome.SAMPLED: "ok", V.Outcome.VACUOUS: "unk",
         V.Outcome.NOT_TRACEABLE: "unk", V.Outcome.TRACE_DIFFERS: "unk", V.Outcome.DOMAIN_MISMATCH: "bad", V.Outcome.RAISED: "bad"}
COLOR = {"ok": "#2b8a3e", "exp": "#e67700", "bad": "#c92a2a", "miss": "#9c36b5", "unk": "#868e96", "na": "#ced4da"}
DTYPE_ORDER = _dtypes.NAMES
# The matrix shows one short mark per row (the full outcome is in the cell's tooltip and the legend).
MARK = {V.Outcome.HOLDS: "holds", V.Outcome.PROVED: "proved", V.Outcome.EXPECTED: "viol.", V.Outcome.UNEXPECTED: "FAIL",
        V.Outcome.NOT_REPRODUCED: "NOT REPR.", V.Outcome.RAISED: "RAISED", V.Outcome.UNKNOWN: "?", V.Outcome.NOT_RUNNABLE: "n/r",
        V.Outcome.NOT_APPLICABLE_BY_DESIGN: "n/a"}

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:16px 24px;color:#212529;max-width:1400px}
h1{margin:0 0 4px;font-size:22px}h2{margin-top:24px;border-bottom:1px solid #dee2e6;font-size:17px}
.verdict{font-size:20px;font-weight:bold;padding:4px 12px;display:inline-block;border-radius:4px;color:#fff}
.PASS{background:#2b8a3e}.FAIL{background:#c92a2a}.UNDECIDED{background:#e67700}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #dee2e6;padding:2px 5px;vertical-align:top}
th{background:#f1f3f5;position:sticky;top:0;z-index:1}
#matrix th.c{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;padding:4px 2px;font-weight:normal}
#matrix td{text-align:center;white-space:nowrap;min-width:28px}#matrix th.op{text-align:left;position:sticky;left:0}
.wrap{max-height:80vh;overflow:auto;border:1px solid #dee2e6}
td.ok{background:#d3f9d8}td.exp{background:#ffe8cc}td.bad{background:#ffc9c9;font-weight:bold}
td.unk{background:#e9ecef}td.na{color:#adb5bd}
#failing li{margin-bottom:6px}.ce{font-family:ui-monospace,monospace;font-size:12px;background:#fff5f5;padding:1px 4px}
.filters{position:sticky;top:0;background:#fff;padding:6px 0;z-index:2;border-bottom:1px solid #dee2e6}
.filters select{margin-right:10px}
.charts{display:flex;flex-wrap:wrap;gap:12px}.charts figure{margin:0}
figcaption{font-size:12px;color:#495057;max-width:420px}code{font-size:12px}
details{margin:8px 0}summary{cursor:pointer;color:#495057}
"""

# Records load-time errors in the DOM (data-errors) and marks the page rendered with the
# number of charts that have a non-empty box, so a headless browser can check both.  The
# filters hide rows of the matrix and the rows table by status, operator and contract.
SCRIPT = """
window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});
function tlFilter(){var st=document.getElementById('f-status').value,op=document.getElementById('f-op').value,
ct=document.getElementById('f-contract').value;
document.querySelectorAll('#rows tr[data-op]').forEach(function(tr){var ok=(!st||tr.dataset.cls===st)&&
(!op||tr.dataset.op===op)&&(!ct||tr.dataset.contract===ct);tr.style.display=ok?'':'none'});
document.querySelectorAll('#matrix tr[data-op]').forEach(function(tr){tr.style.display=(!op||tr.dataset.op===op)?'':'none'});
document.querySelectorAll('#matrix [data-contract]').forEach(function(td){td.style.display=(!ct||td.dataset.contract===ct)?'':'none'});}
window.addEventListener('load',function(){var n=0;document.querySelectorAll('svg.chart').forEach(function(s){
var b=s.getBBox();if(b.width>0&&b.height>0)n++});document.body.setAttribute('data-charts-drawn',String(n));
['f-status','f-op','f-contract'].forEach(function(id){var e=document.getElementById(id);if(e)e.addEventListener('change',tlFilter)});
document.body.setAttribute('data-errors',String(window.__errors.length));
document.body.setAttribute('data-rendered','ok')});
"""


def inline_markdown(text: str) -> str:
    """The few inline Markdown marks of the shared prose (``**bold**``, ```code```) as HTML, the rest escaped."""
    out = escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) else float(str(x))


def _cell_tip(row, cell) -> str:
    v = cell.verdict
    return (f"{cell.id}: {v.status}, discrepancy {_num(v.discrepancy):.3g}, "
            f"bound {_num(v.bound):.3g}, ratio {v.ratio:.3g}")


def _cell_class(row, cell) -> str:
    """The plot class of a cell.  'failing' only when its *row* fails: a dtype that did not reproduce an
    expected violation which another dtype reproduced is 'not reproduced in this dtype', not a failure."""
    out = V.outcome(row.declared, cell.verdict)
    if out == V.Outcome.NOT_REPRODUCED and row.outcome not in V.FAILING:
        return "miss"
    return CLASS.get(out, "unk")


SPAN = 10    # decades either side of the median a discrepancy chart shows


def _clamp_range(values) -> tuple:
    """(lo, hi) decades: the values' own range, at most SPAN decades either side of their median.

    A single bound near 1e-38 would otherwise stretch the axis over 30 decades and squash every other
    point into a corner; points outside are drawn on the edge (and counted in the caption).
    """
    logs = sorted(math.log10(v) for v in values if v > 0)
    if not logs:
        return 0, 1
    mid = logs[len(logs) // 2]
    return math.floor(max(logs[0], mid - SPAN)), math.ceil(min(logs[-1], mid + SPAN))


def discrepancy_charts(doc: Document) -> list[str]:
    """One log-log chart per dtype: each cell's worst discrepancy against its bound.

    Exact cells (bound 0) sit in the bound axis' '0' lane, so a failing exact run plots its failures too
    (a discrepancy of 0 sits in the discrepancy axis' '0' lane)."""
    figs = []
    dtypes = sorted({c.dtype for c in doc.cells},
                    key=lambda d: DTYPE_ORDER.index(d) if d in DTYPE_ORDER else 99)
    names = {"ok": "holds", "exp": "violated (expected)", "bad": "failing row",
             "miss": "expected violation not reproduced in this dtype (row passes)", "unk": "other", "na": "n/a"}
    for dt in dtypes:
        groups: dict[str, list] = {}
        zero_bound = skipped_nan = 0
        for r in doc.rows:
            for c in r.cells:
                v = c.verdict
                if c.dtype != dt or v is None or \
                        v.status in (V.Status.UNKNOWN, V.Status.NOT_RUNNABLE, V.Status.NOT_APPLICABLE_BY_DESIGN):
                    continue
                d, b = _num(v.discrepancy), _num(v.bound)
                if not (math.isfinite(d) and math.isfinite(b)):
                    skipped_nan += 1
                    continue
                if doc.law(r.contract)[1] or b <= 0:
                    zero_bound += 1
                    b = 0.0
                groups.setdefault(_cell_class(r, c), []).append((b, d, _cell_tip(r, c)))
        pts = [p for g in groups.values() for p in g]
        if not pts:
            continue
        lo, hi = _clamp_range([p[0] for p in pts] + [p[1] for p in pts if p[1] > 0])
        edge = 0

        def fit(v):
            nonlocal edge
            if v <= 0:
                return v
            c = min(max(v, 10.0 ** lo), 10.0 ** hi)
            edge += c != v
            return c

        series = [Series(names[k], [(fit(b), fit(d), tip) for b, d, tip in g], color=COLOR[k])
                  for k, g in sorted(groups.items())]
        svg = chart(series, xlabel="bound (derived tolerance)", ylabel="worst discrepancy",
                    title=f"{dt}: discrepancy vs bound", logx=True, logy=True, diagonal=True)
        cap = (f"{len(pts)} cells in {dt}; below the dashed line the law holds within its bound. "
               f"{zero_bound} cells with bound 0 (exact contracts, and tolerance cells whose worst example "
               f"matched bit-for-bit) are drawn in the '0' lane of the bound axis: there any discrepancy "
               f"above the '0' lane is a violation"
               + (f"; not plotted: {skipped_nan} with a non-finite discrepancy" if skipped_nan else "") + "."
               + (f" {edge} values outside 1e{lo}..1e{hi} are drawn on the axis edge (hover for the value)."
                  if edge else "")
               + (" 'Expected violation not reproduced in this dtype': another dtype of the same row "
                  "reproduced it, so the row passes." if "miss" in groups else ""))
        figs.append(f"<figure>{svg}<figcaption>{escape(cap)}</figcaption></figure>")
    return figs


def _extra(cell, key):
    """The law's own measurement ``key`` of a cell's verdict (``verdict.extra``), None when absent."""
    return cell.verdict.extra.get(key) if cell.verdict is not None else None


def closure_charts(doc: Document) -> list[str]:
    """Per host: the old tokens' shift and the null token's norm at every layer, float64 (the reference).

    The other dtypes' curves would sit on top of it (the closure laws are exact): their largest
    values are given in the caption instead of as six more overlapping series.
    """
    figs = []
    for r in doc.rows:
        per_dtype = {}
        for c in r.cells:
            layers = _extra(c, "layers")
            if isinstance(layers, list) and layers and isinstance(layers[0], dict):
                per_dtype[c.dtype] = (c, layers)
        if not per_dtype:
            continue
        shown = next((d for d in DTYPE_ORDER if d in per_dtype), next(iter(per_dtype)))
        c, layers = per_dtype[shown]
        xs = [int(p.get("layer", j)) for j, p in enumerate(layers)]
        series = []
        for key, dashed, hollow, color in (("old_shift", False, False, PALETTE[0]), ("null_norm", True, True, PALETTE[1])):
            if all(key in p for p in layers):
                series.append(Series(f"{key} ({shown})",
                                     [(x, _num(p[key]), f"{c.id} layer {x}: {key} = {_num(p[key]):.3g}")
                                      for x, p in zip(xs, layers)], color=color, line=True, dashed=dashed,
                                     hollow=hollow))
        if not series:
            continue
        others = "; ".join(
            f"{d}: max old shift {max(_num(p.get('old_shift', 0)) for p in ls):.3g}, "
            f"max null norm {max(_num(p.get('null_norm', 0)) for p in ls):.3g}"
            for d, (_, ls) in per_dtype.items() if d != shown)
        svg = chart(series, xlabel="layer", ylabel="L-inf (0 on its own lane)", logy=True,
                    title=f"{r.operator}: closure per layer ({shown})")
        figs.append(f"<figure>{svg}<figcaption>{escape(r.id)}: {escape(r.outcome)}. Solid: shift of "
                    f"the old tokens after inserting a null token; dashed: the null token's own norm (must "
                    f"stay 0)." + (f" Other dtypes: {escape(others)}." if others else "") + "</figcaption></figure>")
    return figs


def tau_charts(doc: Document) -> list[str]:
    """Every numeric metric of a cell's ``tau_sweep`` (in its verdict's ``extra``) against tau."""
    figs = []
    for r in doc.rows:
        for c in r.cells:
            sweep = _extra(c, "tau_sweep")
            if not isinstance(sweep, list) or not sweep or not all(isinstance(p, dict) and "tau" in p for p in sweep):
                continue
            keys = [k for k in sweep[0] if k != "tau" and isinstance(sweep[0][k], (int, float))]
            series = [Series(k, [(_num(p["tau"]), _num(p[k]), f"tau {p['tau']}: {k} = {p[k]}") for p in sweep
                                 if isinstance(p.get(k), (int, float))], line=True) for k in keys]
            if series:
                figs.append(f"<figure>{chart(series, xlabel='tau', ylabel='value', title=c.id)}"
                            f"<figcaption>tau sweep of {escape(c.id)}</figcaption></figure>")
    return figs


def _matrix(rows) -> str:
    ops = list(dict.fromkeys(r.operator for r in rows))
    names = list(dict.fromkeys(r.contract for r in rows))
    by = {(r.operator, r.contract): r for r in rows}
    head = "".join(f'<th class="c" data-contract="{escape(n)}">{escape(n)}</th>' for n in names)
    body = []
    for op in ops:
        tds = []
        for n in names:
            r = by.get((op, n))
            if r is None:
                tds.append(f'<td class="na" data-contract="{escape(n)}"></td>')
            else:
                tip = f"{r.id}: {r.declared}: {r.outcome} ({r.reason})"
                tds.append(f'<td class="{CLASS[r.outcome]}" data-contract="{escape(n)}" title="{escape(tip)}">'
                           f'{escape(MARK.get(r.outcome, "?"))}</td>')
        body.append(f'<tr data-op="{escape(op)}"><th class="op">{escape(op)}</th>{"".join(tds)}</tr>')
    legend = ", ".join(f"{m} = {o}" for o, m in MARK.items())
    return (f'<p class="legend">Matrix marks: {escape(legend)}; empty = not declared. Hover a cell for its '
            f'declaration and reason.</p><div class="wrap"><table id="matrix"><tr><th class="op">operator</th>'
            f'{head}</tr>{"".join(body)}</table></div>')


def _order(rows) -> list:
    """Failing rows first, then unknown / not runnable, then the rest in registry order."""
    rank = {"bad": 0, "unk": 1}
    return sorted(rows, key=lambda r: rank.get(CLASS[r.outcome], 2))


def _rows_table(rows, meta=None) -> str:
    out = ['<table id="rows"><tr><th>row</th><th>declared</th><th>outcome</th>'
           '<th>cells: examples, worst disc/bound</th><th>minimal counterexample</th></tr>']
    for r in _order(rows):
        parts = []
        for c in r.cells:
            v = c.verdict
            if v is not None and v.status != V.Status.NOT_APPLICABLE_BY_DESIGN:
                parts.append(f"{c.dtype}: {v.status}, {v.examples} ex, {v.ratio:.2e}")
        cls = CLASS[r.outcome]
        out.append(f'<tr data-op="{escape(r.operator)}" data-contract="{escape(r.contract)}" '
                   f'data-cls="{cls}"><td><code>{escape(r.id)}</code></td><td>{escape(str(r.declared))}</td>'
                   f'<td class="{cls}">{escape(r.outcome)}</td><td>{escape("; ".join(parts))}</td>'
                   f'<td>{inline_markdown(first_counterexample(r, meta))}</td></tr>')
    out.append("</table>")
    return "".join(out)


def _filters(rows) -> str:
    def select(ident, label, values):
        opts = "".join(f'<option value="{escape(v)}">{escape(t)}</option>' for v, t in values)
        return f'<label>{label} <select id="{ident}"><option value="">all</option>{opts}</select></label>'

    statuses = [("bad", "failing"), ("exp", "expected violation reproduced"), ("ok", "holds / proved"),
                ("unk", "unknown / not runnable"), ("na", "not applicable by design")]
    ops = [(o, o) for o in dict.fromkeys(r.operator for r in rows)]
    names = [(n, n) for n in dict.fromkeys(r.contract for r in rows)]
    return ('<div class="filters">' + select("f-status", "status", statuses) + select("f-op", "operator", ops)
            + select("f-contract", "contract", names) + "</div>")


def _tensor_text(value) -> str:
    """A small nested list of numbers as rows of 6-digit numbers (one token per line); anything else as text."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return str(value)
    return np.array2string(arr, separator=", ", formatter={"float_kind": lambda v: f"{v:.6g}"},
                           max_line_width=10 ** 6, threshold=10 ** 6)


def _tensors(row) -> str:
    """The input tensors of the row's first failing counterexample, when small enough to be stored with it."""
    for c in row.cells:
        v = c.verdict
        ce = (v.counterexample if v is not None else None) or {}
        if v is not None and v.status in (V.Status.VIOLATED, V.Status.REFUTED, V.Status.RAISED) and "x" in ce:
            shown = [("x", ce["x"])] + ([("mask", ce["mask"])] if ce.get("mask") is not None else [])
            return "".join(f'<pre class="tensor">{name} ({c.dtype} cell; float64 values, 6 digits shown, '
                           f'exact in the JSON) =\n{escape(_tensor_text(t))}</pre>' for name, t in shown)
    return ""


def _failing(byid, failing, meta=None) -> str:
    items = []
    for rid in failing:
        r = byid[rid]
        ce = first_counterexample(r, meta)
        items.append(f"<li><code>{escape(rid)}</code>: <b>{escape(r.outcome)}</b> &mdash; {escape(r.reason)}"
                     + (f'<br>counterexample: <span class="ce">{inline_markdown(ce)}</span>' if ce else "")
                     + _tensors(r) + "</li>")
    return f'<h2>Failing rows</h2><ul id="failing">{"".join(items)}</ul>'


def _run_facts(meta: Meta, stem: str) -> str:
    """The command line the run was made with and its wall time (read from ``stem.timings.js`` beside the page,
    so the page itself stays byte-identical for a seed)."""
    command = meta.run.execution.command if meta.run is not None else None
    parts = [f'command: <code id="command">{escape(command)}</code>' if command else ""]
    parts.append(f'wall time: <span id="wall-time">in {escape(stem)}.timings.json</span>')
    return (f'<p id="run-facts">{" &middot; ".join(p for p in parts if p)}</p>'
            f'<script src="{escape(stem)}.timings.js"></script>')


def html(document: Document, stem: str = "conformance", also=()) -> str:
    """The whole page as one string: the verdict and failing rows on the first screen, then the rest (``also``:
    other tiers' Documents of the same selection, whose verdicts the law table shows beside this one's)."""
    rows, meta, summ, st = document.rows, document.meta, document.summary(), document.standing()
    byid = {r.id: r for r in rows}
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width">',
             "<title>tokenlaw conformance report</title>", f"<style>{CSS}</style>",
             f"<script>{SCRIPT}</script></head><body>",
             "<h1>tokenlaw conformance report</h1>",
             f'<p id="headline"><span class="verdict {st.result}">{st.result}</span> '
             f'{escape(headline(summ))}</p>',
             f"<p>{inline_markdown(run_line(meta))}</p>", _run_facts(meta, stem)]
    if interrupted_line(meta):
        parts.append(f'<p id="interrupted"><strong>{inline_markdown(interrupted_line(meta))}</strong></p>')
    if st.failing:
        parts.append(_failing(byid, st.failing, meta))
    blocked = by_reason(rows, V.Status.NOT_RUNNABLE)
    if blocked:
        items = "".join(f"<li>{escape(reason)} <details><summary>{counted(len(ids), 'cell')}</summary>"
                        f"<code>{escape(', '.join(ids))}</code></details></li>" for reason, ids in blocked.items())
        parts.append(f'<h2>Cells not runnable here</h2><ul id="not-runnable">{items}</ul>')
    designed = by_design(rows)
    if designed:
        n = sum(len(ids) for ids in designed.values())
        items = "".join(f"<li>{escape(reason)} ({len(ids)}): {escape(', '.join(ids))}</li>"
                        for reason, ids in designed.items())
        parts.append(f'<details id="by-design"><summary>{counted(n, "cell")} not applicable by design (not '
                     f'counted above; {counted(len(designed), "reason")})</summary><ul>{items}</ul></details>')
    parts += [_filters(rows), "<h2>Matrix</h2>", _matrix(rows),
              f'<p id="how-to-read">{inline_markdown(HOW_TO_READ)}</p>',
              lawtable.html(lawtable.in_report(lawtable.build([document, *also])), inline_markdown)]
    for title, figs in (("Discrepancy vs bound", discrepancy_charts(document)),
                        ("Closure per layer", closure_charts(document)), ("Tau sweeps", tau_charts(document))):
        if figs:
            parts.append(f'<h2>{title}</h2><div class="charts">{"".join(figs)}</div>')
    parts += ["<h2>Rows (failing first)</h2>", _rows_table(rows, meta), "</body></html>", ""]
    return "\n".join(parts)
