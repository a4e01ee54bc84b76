"""Self-contained HTML view of a report document: summary, matrix, plots of the verdicts' own numbers.

Everything is inline (CSS, SVG charts from :mod:`.svgplot`, a few lines of
script that only record render errors), so the page opens from a file, in
CI artefacts or offline.  The plots are drawn from the verdicts:

* discrepancy against bound per dtype, one point per tolerance cell (exact
  contracts have bound 0 and are counted, not plotted);
* the closure per-layer chart, for cells whose verdict carries
  ``extra["layers"]`` (a list of ``{layer, old_shift, null_norm, bound}``);
* tau sweeps, for cells whose verdict carries ``extra["tau_sweep"]`` (a list
  of ``{"tau": t, metric: value, ...}``).
"""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

from tokenlaw.properties import verdict as V

from .svgplot import PALETTE, Series, chart
from .writers import HOW_TO_READ, first_counterexample, ratio, run_line, summary

CLASS = {V.OK_HOLDS: "ok", V.OK_PROVED: "ok", V.OK_EXPECTED: "exp", V.BAD_UNEXPECTED: "bad",
         V.BAD_NOT_REPRODUCED: "bad", V.OUT_UNKNOWN: "unk", V.OUT_NOT_RUNNABLE: "unk", V.NOT_APPLICABLE: "na",
         V.OK_SAMPLED: "ok", V.OUT_VACUOUS: "unk", V.OUT_NOT_TRACEABLE: "unk"}
COLOR = {"ok": "#2b8a3e", "exp": "#e67700", "bad": "#c92a2a", "unk": "#868e96", "na": "#ced4da"}
DTYPE_ORDER = ("float64", "float32", "float16", "bfloat16")

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#212529;max-width:1400px}
h1{margin:0 0 4px}h2{margin-top:28px;border-bottom:1px solid #dee2e6}
.verdict{font-size:20px;font-weight:bold;padding:6px 12px;display:inline-block;border-radius:4px;color:#fff}
.PASS{background:#2b8a3e}.FAIL{background:#c92a2a}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #dee2e6;padding:3px 6px;vertical-align:top}
th{background:#f1f3f5;position:sticky;top:0}
td.ok{background:#d3f9d8}td.exp{background:#ffe8cc}td.bad{background:#ffc9c9;font-weight:bold}
td.unk{background:#e9ecef}td.na{color:#adb5bd}
.charts{display:flex;flex-wrap:wrap;gap:12px}.charts figure{margin:0}
figcaption{font-size:12px;color:#495057;max-width:420px}code{font-size:12px}
"""

# Records load-time errors in the DOM (data-errors) and marks the page rendered with the
# number of charts that have a non-empty box, so a headless browser can check both.
SCRIPT = """
window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});
window.addEventListener('load',function(){var n=0;document.querySelectorAll('svg.chart').forEach(function(s){
var b=s.getBBox();if(b.width>0&&b.height>0)n++});document.body.setAttribute('data-charts-drawn',String(n));
document.body.setAttribute('data-errors',String(window.__errors.length));
document.body.setAttribute('data-rendered','ok')});
"""


def _num(x) -> float:
    return float(x) if isinstance(x, (int, float)) else float(str(x))


def _cell_tip(row, cell) -> str:
    v = cell["verdict"]
    return (f"{cell['id']}: {v['status']}, discrepancy {_num(v['discrepancy']):.3g}, "
            f"bound {_num(v['bound']):.3g}, ratio {ratio(v):.3g}")


def discrepancy_charts(doc: dict) -> list[str]:
    """One log-log chart per dtype: each tolerance cell's worst discrepancy against its bound."""
    figs = []
    dtypes = sorted({c["dtype"] for r in doc["rows"] for c in r["cells"]},
                    key=lambda d: DTYPE_ORDER.index(d) if d in DTYPE_ORDER else 99)
    for dt in dtypes:
        groups: dict[str, list] = {}
        zero_bound = skipped_nan = 0
        for r in doc["rows"]:
            for c in r["cells"]:
                v = c["verdict"]
                if c["dtype"] != dt or v is None or v["status"] in (V.UNKNOWN, V.NOT_RUNNABLE):
                    continue
                d, b = _num(v["discrepancy"]), _num(v["bound"])
                if r["exact"] or b <= 0:
                    zero_bound += 1
                    continue
                if not (math.isfinite(d) and math.isfinite(b)):
                    skipped_nan += 1
                    continue
                groups.setdefault(CLASS[c.get("outcome", r["outcome"])], []).append((b, d, _cell_tip(r, c)))
        names = {"ok": "holds", "exp": "violated (expected)", "bad": "failing", "unk": "other", "na": "n/a"}
        series = [Series(names[k], pts, color=COLOR[k]) for k, pts in sorted(groups.items())]
        n = sum(len(s.points) for s in series)
        if not n:
            continue
        svg = chart(series, xlabel="bound (derived tolerance)", ylabel="worst discrepancy",
                    title=f"{dt}: discrepancy vs bound", logx=True, logy=True, diagonal=True)
        cap = (f"{n} tolerance cells in {dt}; below the dashed line the law holds within its bound. "
               f"Not plotted: {zero_bound} cells with bound 0 (exact contracts, and tolerance cells whose "
               f"worst example matched bit-for-bit)"
               + (f", {skipped_nan} with a non-finite discrepancy" if skipped_nan else "") + ".")
        figs.append(f"<figure>{svg}<figcaption>{escape(cap)}</figcaption></figure>")
    return figs


def closure_charts(doc: dict) -> list[str]:
    """Per host: the old tokens' shift and the null token's norm at every layer, per dtype."""
    figs = []
    for r in doc["rows"]:
        series = []
        for i, c in enumerate(r["cells"]):
            layers = ((c["verdict"] or {}).get("extra") or {}).get("layers")
            if not isinstance(layers, list) or not layers or not isinstance(layers[0], dict):
                continue
            xs = [int(p.get("layer", j)) for j, p in enumerate(layers)]
            color = PALETTE[i % len(PALETTE)]     # one colour per dtype: solid shift, dashed null norm
            for key, dashed, hollow in (("old_shift", False, False), ("null_norm", True, True)):
                if all(key in p for p in layers):
                    series.append(Series(f"{c['dtype']} {key}",
                                         [(x, _num(p[key]), f"{c['id']} layer {x}: {key} = {_num(p[key]):.3g}")
                                          for x, p in zip(xs, layers)], color=color, line=True, dashed=dashed,
                                         hollow=hollow))
        if series:
            svg = chart(series, xlabel="layer", ylabel="L-inf (0 on its own lane)", logy=True,
                        title=f"{r['operator']}: closure per layer")
            figs.append(f"<figure>{svg}<figcaption>{escape(r['id'])}: {escape(r['outcome'])}. Solid: shift of "
                        f"the old tokens after inserting a null token; dashed: the null token's own norm (must "
                        f"stay 0).</figcaption></figure>")
    return figs


def tau_charts(doc: dict) -> list[str]:
    """Every numeric metric of a cell's ``extra["tau_sweep"]`` against tau."""
    figs = []
    for r in doc["rows"]:
        for c in r["cells"]:
            sweep = ((c["verdict"] or {}).get("extra") or {}).get("tau_sweep")
            if not isinstance(sweep, list) or not sweep or not all(isinstance(p, dict) and "tau" in p for p in sweep):
                continue
            keys = [k for k in sweep[0] if k != "tau" and isinstance(sweep[0][k], (int, float))]
            series = [Series(k, [(_num(p["tau"]), _num(p[k]), f"tau {p['tau']}: {k} = {p[k]}") for p in sweep
                                 if isinstance(p.get(k), (int, float))], line=True) for k in keys]
            if series:
                figs.append(f"<figure>{chart(series, xlabel='tau', ylabel='value', title=c['id'])}"
                            f"<figcaption>tau sweep of {escape(c['id'])}</figcaption></figure>")
    return figs


def _matrix(rows) -> str:
    ops = list(dict.fromkeys(r["operator"] for r in rows))
    names = list(dict.fromkeys(r["contract"] for r in rows))
    by = {(r["operator"], r["contract"]): r for r in rows}
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    body = []
    for op in ops:
        tds = []
        for n in names:
            r = by.get((op, n))
            if r is None:
                tds.append('<td class="na">-</td>')
            else:
                tds.append(f'<td class="{CLASS[r["outcome"]]}" title="{escape(r["reason"])}">'
                           f'{escape(r["declared"] or "")}: {escape(r["outcome"])}</td>')
        body.append(f"<tr><th>{escape(op)}</th>{''.join(tds)}</tr>")
    return f'<table id="matrix"><tr><th>operator</th>{head}</tr>{"".join(body)}</table>'


def _rows_table(rows) -> str:
    out = ['<table id="rows"><tr><th>row</th><th>declared</th><th>outcome</th>'
           '<th>cells: examples, worst disc/bound</th><th>minimal counterexample</th></tr>']
    for r in rows:
        parts = []
        for c in r["cells"]:
            v = c["verdict"]
            if v is not None:
                parts.append(f"{c['dtype']}: {v['status']}, {v['examples']} ex, {ratio(v):.2e}")
        out.append(f'<tr><td><code>{escape(r["id"])}</code></td><td>{escape(str(r["declared"]))}</td>'
                   f'<td class="{CLASS[r["outcome"]]}">{escape(r["outcome"])}</td><td>{escape("; ".join(parts))}</td>'
                   f'<td>{escape(first_counterexample(r))}</td></tr>')
    out.append("</table>")
    return "".join(out)


def html(doc: dict) -> str:
    """The whole page as one string."""
    rows, meta = doc["rows"], doc["meta"]
    summ = doc.get("summary") or summary(rows)
    byid = {r["id"]: r for r in rows}
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>tokenlaw conformance report</title>", f"<style>{CSS}</style>",
             f"<script>{SCRIPT}</script></head><body>",
             "<h1>tokenlaw conformance report</h1>",
             f'<p><span class="verdict {summ["result"]}">{summ["result"]}</span> '
             f'{summ["rows"]} declared rows, {summ["cells"]} cells: '
             + escape(", ".join(f"{n} {k}" for k, n in summ["outcomes"].items())) + "</p>",
             f"<p>{escape(run_line(meta))}</p>"]
    if summ["failing"]:
        items = "".join(f"<li><code>{escape(rid)}</code>: {escape(byid[rid]['outcome'])} &mdash; "
                        f"{escape(first_counterexample(byid[rid]))}</li>" for rid in summ["failing"])
        parts.append(f'<h2>Failing rows</h2><ul id="failing">{items}</ul>')
    blocked = [c for r in rows for c in r["cells"] if c.get("verdict") and c["verdict"]["status"] == V.NOT_RUNNABLE]
    if blocked:
        items = "".join(f"<li><code>{escape(c['id'])}</code>: {escape(c['verdict'].get('detail', ''))}</li>"
                        for c in blocked)
        parts.append(f'<h2>Cells not runnable here</h2><ul id="not-runnable">{items}</ul>')
    parts += ["<h2>Matrix</h2>", _matrix(rows), f"<p>{escape(HOW_TO_READ)}</p>"]
    for title, figs in (("Discrepancy vs bound", discrepancy_charts(doc)),
                        ("Closure per layer", closure_charts(doc)), ("Tau sweeps", tau_charts(doc))):
        if figs:
            parts.append(f'<h2>{title}</h2><div class="charts">{"".join(figs)}</div>')
    parts += ["<h2>Rows</h2>", _rows_table(rows), "</body></html>", ""]
    return "\n".join(parts)
