"""Generated from the registry: one test per declared (operator, contract) row.

Ids read ``oattention-null_receiver``.  Each row runs the fuzz tier on every
dtype the contract and operator support; a claimed law must hold, an
expected violation must be found (and shrunk).
"""
from __future__ import annotations

import pytest

from tokenlaw.fuzz.rows import run_rows
from tokenlaw.properties.catalogue import default_registry
from tokenlaw.properties import verdict as V
from tokenlaw.properties.plan import plan

EXAMPLES = 15
ROWS = plan(default_registry())


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_row_matches_declaration(row):
    (done,) = run_rows(default_registry(), [row], examples=EXAMPLES, progress=False)
    bad = [(c.dtype, c.verdict.detail, c.verdict.counterexample) for c in done.cells
           if V.outcome(done.declared, c.verdict) == V.Outcome.UNEXPECTED]
    assert done.outcome not in V.FAILING, f"{row.id}: {done.outcome}; {bad or [c.verdict.detail for c in done.cells]}"
    if done.declared == "violates":
        found = [c.verdict for c in done.cells if c.verdict.violated]
        # the reproduced violation carries its minimal counterexample
        assert found and found[0].counterexample is not None
