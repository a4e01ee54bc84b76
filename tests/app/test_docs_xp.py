"""``tokenlaw docs xp`` lists every ``xp`` primitive and what ``projections`` does (issue 47, point 8)."""
from __future__ import annotations

import inspect
import subprocess
import sys

from tokenlaw.app import cli
from tokenlaw.operators import projections
from tokenlaw.operators.xp import PRIMITIVES


def test_docs_xp_names_every_primitive_and_every_projections_function(capsys):
    assert cli.main(["docs", "xp"]) == 0
    text = capsys.readouterr().out
    missing = [p for p in PRIMITIVES if f"`xp.{p}(" not in text and f"xp.{p}(" not in text]
    assert missing == [], missing
    public = [name for name, fn in inspect.getmembers(projections, inspect.isfunction)
              if not name.startswith("_") and fn.__module__ == projections.__name__]
    assert [n for n in public if f"`{n}(" not in text] == []
    assert "merges the heads itself" in text
    for added in ("cumsum", "tril", "arange"):
        assert added in PRIMITIVES


def test_docs_prints_templates_for_a_users_project(capsys):
    """Issue 47, point 7: `tokenlaw docs ci-workflow` exited 2; the shipped files are tokenlaw's own."""
    import yaml
    for topic, needle in (("ci-workflow", "jobs"), ("pre-commit", "hooks")):
        assert cli.main(["docs", topic]) == 0
        text = capsys.readouterr().out
        assert "--operators my_ops.py" in text and "kernels/**" not in text, topic
        assert needle in yaml.safe_dump(yaml.safe_load(text)), topic        # valid YAML
    assert cli.main(["docs"]) == 0
    listed = capsys.readouterr().out
    assert "ci-workflow" in listed and "pre-commit" in listed and "xp" in listed


def test_a_shipped_page_and_the_list_load_no_torch():
    """Issue 47: `tokenlaw docs xp` (like every shipped page) is printed without importing torch; `laws`
    (the installed registry) is the topic that needs it."""
    probe = ("import sys; from tokenlaw.app import cli; code = cli.main(sys.argv[1:]); "
             "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', code, file=sys.stderr)")
    for argv, torch_expected in ((["docs", "xp"], False), (["docs", "fuzz"], False), (["docs"], False),
                                 (["docs", "ci-workflow", "--json"], False), (["docs", "laws"], True)):
        got = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120)
        said = got.stderr.strip().splitlines()[-1]
        assert said == f"{'TORCH' if torch_expected else 'NO-TORCH'} 0", (argv, got.stderr[-2000:])
