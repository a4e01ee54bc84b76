"""The HTML report as a reviewer sees it: headless Chromium at 1400 x 900, a failing run and a passing run.

The test copies each page and appends a measuring script (the shipped page
carries none of it) that records, in attributes of <body>, what is visible:
the headline, where the first failing row sits, whether any raw Markdown
marks reach the rendered text, whether the by-design cells are folded, how
wide the matrix is, and for every chart whether its axes have labels and
readable, non-overlapping tick labels.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tokenlaw.app import cli

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")

WIDTH, HEIGHT = 1400, 900

LEAKY = textwrap.dedent('''
    """An operator that breaks the law it claims: f(0) = 0.001, not 0."""
    from tokenlaw.operators import arguments
    from tokenlaw.operators.registry import Domain, declare


    def _params(gen, d_model, dtype=None):
        return {}


    @declare(name="leaky", domain=Domain(params=_params, dtypes=("float64", "float32"), n_max=3),
             traits={"token_local"}, claims={"zero_absorption": "claimed, but the offset maps 0 to 0.001"})
    def leaky(xp, x):
        arguments.tokens(x)
        return x + 0.001
''')

MEASURE = """
<script>
window.addEventListener('load', function () {
  var b = document.body, q = function (s) { return document.querySelector(s); };
  var set = function (k, v) { b.setAttribute('data-m-' + k, String(v)); };
  set('headline', q('#headline') ? q('#headline').innerText : '');
  var li = q('#failing li');
  set('failing-bottom', li ? li.getBoundingClientRect().bottom : -1);
  set('failing-text', li ? li.innerText : '');
  var facts = q('#run-facts'), pre = q('#failing pre.tensor');
  set('command', q('#command') ? q('#command').innerText : '');
  set('wall-time', q('#wall-time') ? q('#wall-time').innerText : '');
  set('facts-bottom', facts ? facts.getBoundingClientRect().bottom : -1);
  set('tensor', pre ? pre.innerText : '');
  set('tensor-top', pre ? pre.getBoundingClientRect().top : -1);
  set('chart-titles', Array.prototype.map.call(document.querySelectorAll('svg.chart'),
      function (s) { return s.getAttribute('aria-label'); }).join('|'));
  var text = b.innerText;
  set('raw-md', (text.match(/\\*\\*|`/g) || []).length);
  var d = q('#by-design');
  set('by-design', d ? (d.open ? 'open' : 'folded') : 'absent');
  set('by-design-visible', d ? d.querySelector('ul').checkVisibility() : 'absent');
  set('matrix-width', q('#matrix') ? q('#matrix').getBoundingClientRect().width : -1);
  set('viewport', window.innerWidth);
  var charts = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var texts = Array.prototype.slice.call(svg.querySelectorAll('text'));
    var sizes = texts.map(function (t) { return parseFloat(t.getAttribute('font-size') || '12'); });
    var boxes = texts.filter(function (t) { return t.getAttribute('text-anchor') === 'middle'
        && !t.getAttribute('transform') && t.getAttribute('font-size') === '10'; })
        .map(function (t) { return t.getBoundingClientRect(); });
    var overlaps = 0;
    for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i], c = boxes[j];
      if (Math.abs(a.top - c.top) < 2 && a.left < c.right && c.left < a.right) overlaps++;
    }
    var labels = texts.filter(function (t) { return t.getAttribute('text-anchor') === 'end'; }).length;
    var box = svg.getBBox();
    charts.push({ticks_y: labels, ticks_x: boxes.length, overlaps: overlaps, min_font: Math.min.apply(null, sizes),
                 width: box.width, height: box.height, axis_titles: svg.querySelectorAll('text[font-size="11"]').length});
  });
  set('charts', JSON.stringify(charts));
  set('done', 'yes');
});
</script>
"""


def report(tmp_path_factory, name, argv):
    out = tmp_path_factory.mktemp(name)
    code = cli.main([*argv, "--out", str(out), "--json"])
    return code, out / "conformance.html"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    src = tmp_path_factory.mktemp("leaky_src")
    (src / "leaky_ops.py").write_text(LEAKY)
    sys.path.insert(0, str(src))
    try:
        failing = report(tmp_path_factory, "failing", ["--operators", "leaky_ops", "check", "--operator", "leaky",
                                                       "--operator", "presence", "--examples", "3"])
    finally:
        sys.path.remove(str(src))
        sys.modules.pop("leaky_ops", None)
    passing = report(tmp_path_factory, "passing", ["check", "--operator", "presence", "--operator", "pn",
                                                   "--operator", "otransformer", "--contract", "closure",
                                                   "--contract", "differential", "--contract", "zero_absorption",
                                                   "--contract", "sub_simplex", "--examples", "3",
                                                   # at 3 examples otransformer's bfloat16 differential is vacuous
                                                   # (its near-null examples inconclusive): a smoke run, not a pass
                                                   "--dtype", "float64", "--dtype", "float32", "--dtype", "float16"])
    return {"failing": failing, "passing": passing}


def seen(page: Path, tmp_path) -> dict:
    probe = tmp_path / page.name
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    for beside in page.parent.glob("*.timings.js"):         # the page reads its wall time from it
        shutil.copy(beside, tmp_path / beside.name)
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--no-first-run", f"--window-size={WIDTH},{HEIGHT}",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", out.stdout).group(1)
    attrs = {k: v for k, v in re.findall(r'data-([\w-]+)="([^"]*)"', body)}
    assert attrs.get("m-done") == "yes" and attrs.get("errors") == "0", body
    return {k[2:] if k.startswith("m-") else k: v.replace("&quot;", '"').replace("&amp;", "&") for k, v in attrs.items()}


def test_failing_report_shows_the_failure_first(pages, tmp_path):
    code, page = pages["failing"]
    assert code == 1
    m = seen(page, tmp_path)
    assert m["headline"].startswith("FAIL")
    assert 0 < float(m["failing-bottom"]) <= HEIGHT, "the failing row is above the fold"
    text = m["failing-text"]
    assert "leaky-zero_absorption" in text and "UNEXPECTED violation" in text
    assert re.search(r"counterexample: float\d+: n=\d+, batch=\d+, d=\d+, seed=\d+", text), text   # drawn fields
    # and the command that replays it, with the module and the replay directory the run used
    assert "tokenlaw --operators leaky_ops replay leaky-zero_absorption-" in text and " --replays " in text
    assert m["raw-md"] == "0", "no raw Markdown marks in the rendered text"
    # the first screen also has the command line, the wall time (from conformance.timings.js) and the tensors
    assert m["command"].startswith("tokenlaw --operators leaky_ops check --operator leaky")
    assert re.fullmatch(r"\d+\.\d s|\d+ min \d+ s", m["wall-time"]), m["wall-time"]
    assert 0 < float(m["facts-bottom"]) <= HEIGHT
    assert m["tensor"].startswith("x (") and re.search(r"\[\[\[-?\d", m["tensor"]), m["tensor"]
    assert 0 < float(m["tensor-top"]) <= HEIGHT, "the counterexample's tensor is on the first screen"
    # the failing exact cells are plotted (in the bound axis' 0 lane), not left out
    assert "float64: discrepancy vs bound" in m["chart-titles"]


def test_passing_report_is_readable(pages, tmp_path):
    code, page = pages["passing"]
    assert code == 0
    m = seen(page, tmp_path)
    assert m["headline"].startswith("PASS") and "not applicable" not in m["headline"]
    assert m["raw-md"] == "0"
    # since issue 43 judged the eager float32 differential cell, an eager run has no cell that is not applicable
    # by design: the page must then have no such section (and fold it where a run has one)
    if m["by-design"] == "absent":
        assert "not applicable by design (not" not in page.read_text(), "a by-design section the page hides"
    else:
        assert m["by-design"] == "folded" and m["by-design-visible"] == "false", "by-design cells folded"
    assert 0 < float(m["matrix-width"]) <= WIDTH
    charts = json.loads(m["charts"])
    assert len(charts) >= 3
    for c in charts:
        assert c["width"] > 100 and c["height"] > 100
        assert c["axis_titles"] >= 2, "both axes have a title"
        assert c["ticks_y"] >= 2 and c["ticks_x"] >= 2, "both axes have tick labels"
        assert c["overlaps"] == 0, "tick labels do not overlap"
        assert c["min_font"] >= 10
