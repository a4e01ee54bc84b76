"""The page to watch while a campaign runs: one self-contained HTML file that reloads itself.

``tokenlaw campaign`` writes ``OUT/campaign.html`` when the cluster is up and after every round
(:func:`page` of the report so far); a browser pointed at the file reloads it every
:data:`REFRESH_S` seconds until the campaign has finished, when the last version stops reloading.  It
shows where the cells run (the Dask scheduler, its dashboard, the workers), per cell the rounds,
examples, examples per second, the next round's budget, the best discrepancy / bound, the regimes
reached (and those never reached) and the violations, each with the command that replays it.
Everything is inline (no script or style from elsewhere), so it opens from a file, offline.

>>> from tokenlaw.reports.campaign import CampaignReport
>>> "http-equiv" in page(CampaignReport({"finished": False, "rounds": 0, "seconds": 0, "minutes": 1,
...                                      "dask": {"workers": {}}}, ()))
True
"""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

from .campaign import CampaignCell, CampaignReport
from .text import campaign_replay

REFRESH_S = 5

_STYLE = """body{font:14px system-ui,sans-serif;margin:1.5em;color:#212529}
table{border-collapse:collapse}td,th{border:1px solid #dee2e6;padding:.25em .5em;text-align:left}
th{background:#f1f3f5}.bad{color:#c92a2a;font-weight:600}.exp{color:#e67700}.never{color:#868e96}
code{font-size:12px}"""

# Records that the page rendered (the test in headless Chromium reads these attributes back).
_SCRIPT = """window.addEventListener('load', function () {
  var b = document.body; b.dataset.rendered = 'ok';
  b.dataset.cells = document.querySelectorAll('#cells tbody tr').length;
});"""


def _e(value) -> str:
    return escape(str(value), {'"': "&quot;"})


def _rate(examples: int, seconds: float) -> str:
    return f"{examples / seconds:.0f}" if seconds and seconds > 0 else "-"


def _ratio(value) -> str:
    return "inf" if value is None or value == math.inf else f"{value:.3g}"


def _regimes(cell: CampaignCell) -> str:
    reached = [f"{_e(n)} {k}" for n, k in cell.regimes.items() if k]
    never = [_e(n) for n, k in cell.regimes.items() if not k]
    text = ", ".join(reached) or "-"
    return text + (f' <span class="never">(never: {", ".join(never)})</span>' if never else "")


def _findings(cell: CampaignCell) -> str:
    cls = "bad" if cell.declared == "claims" else "exp"
    return ", ".join(f'<code class="{cls}">{_e(v.replay)}</code>' for v in cell.violations) or "-"


def page(report: CampaignReport) -> str:
    """The HTML page of a campaign report (``orchestration.campaigns.run``'s, finished or not)."""
    meta, cells = report.meta, report.cells
    finished = meta.get("finished", True)
    examples = sum(c.examples for c in cells)
    dask = meta.get("dask") or {}
    dashboard = dask.get("dashboard")
    where = f"scheduler <code>{_e(dask.get('scheduler'))}</code>" + (
        f', dashboard <a href="{_e(dashboard)}">{_e(dashboard)}</a>' if dashboard else ", no dashboard (bokeh)")
    workers = ", ".join(f"<code>{_e(a)}</code> ({n})" for a, n in dask.get("workers", {}).items()) or "-"
    state = ("finished" + (", interrupted" if meta.get("interrupted") else "") if finished
             else f"running: reloads every {REFRESH_S} s")
    unexpected = [c for c in cells if c.unexpected]
    found = sum(len(c.violations) for c in cells)
    head = [f"<!doctype html><html><head><meta charset=\"utf-8\"><title>tokenlaw campaign</title>",
            f'<meta http-equiv="refresh" content="{REFRESH_S}">' if not finished else "",
            f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head>",
            f'<body data-finished="{str(finished).lower()}" data-rounds="{meta["rounds"]}">',
            "<h1>tokenlaw campaign</h1>",
            f'<p id="status">{_e(state)}: round {meta["rounds"]}, {meta["seconds"]:.0f} s of '
            f'{meta["minutes"] * 60:.0f} s; {len(cells)} cells, <span id="examples">{examples}</span> examples, '
            f'{_rate(examples, meta["seconds"])} examples/s; {found} violations'
            + (f', <span class="bad">{len(unexpected)} of a claimed law</span>' if unexpected else "") + "</p>",
            f"<p>Dask: {where}; workers (cells run): {workers}</p>",
            '<table id="cells"><thead><tr><th>cell</th><th>rounds</th><th>examples</th><th>examples/s</th>'
            "<th>next budget</th><th>best ratio</th><th>regimes reached</th><th>violations</th></tr></thead><tbody>"]
    rows = [f'<tr><td><code>{_e(c.id)}</code></td><td>{c.rounds}</td><td>{c.examples}</td>'
            f'<td>{_rate(c.examples, c.seconds)}</td><td>{c.budget}</td>'
            f'<td>{_ratio(c.best_ratio)}</td><td>{_regimes(c)}</td><td>{_findings(c)}</td></tr>' for c in cells]
    findings = ['</tbody></table><h2>Findings</h2><ul id="findings">']
    for c in cells:
        for v in c.violations:
            what = "UNEXPECTED (a claimed law)" if c.declared == "claims" else "expected"
            findings.append(f'<li><code>{_e(c.id)}</code> round {v.round}, {what}: {_e(v.detail)}<br>'
                            f'<code>{_e(campaign_replay(v.replay, meta))}</code></li>')
    findings.append("</ul></body></html>")
    return "\n".join(head + rows + findings) + "\n"
