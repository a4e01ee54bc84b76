"""tokenlaw's claimed cells as @given tests, for HypoFuzz (or plain pytest).

HypoFuzz is not open source and tokenlaw never depends on it: its licence allows non-commercial use only
(personal projects, education, non-profit research, open source that is not commercially supported);
any use in a commercial organisation, commercial CI included, needs a paid licence from its author
(hypofuzz.com/pricing).  With a licence:

    pip install hypofuzz
    hypothesis fuzz -- examples/hypofuzz/test_tokenlaw_cells.py            # every claimed cell
    hypothesis fuzz -- examples/hypofuzz/test_tokenlaw_cells.py -k oattention

Without one, the same tests run under pytest (a fixed budget each), and ``tokenlaw campaign`` is the
time-boxed search tokenlaw ships.  TOKENLAW_OPERATORS=a,b and TOKENLAW_DTYPES=float32 narrow the cells.
A failure names the cell and the case; its law is the cell's row in ``tokenlaw check``.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenlaw import check_example, claimed_cells, default_registry, strategy

REGISTRY = default_registry()


def _names(var):
    return [n for n in os.environ.get(var, "").split(",") if n] or None


CELLS = claimed_cells(REGISTRY, operators=_names("TOKENLAW_OPERATORS"), dtypes=_names("TOKENLAW_DTYPES"))


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_cell(cell, data):
    check_example(REGISTRY, cell, data.draw(strategy(REGISTRY, cell), label="case"))
