"""``tokenlaw docs xp`` lists every ``xp`` primitive and what ``projections`` does (issue 47, point 8)."""
from __future__ import annotations

import inspect

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
