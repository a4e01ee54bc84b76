"""The claimed cells as ordinary Hypothesis ``@given`` tests, for a fuzzer that runs pytest tests (HypoFuzz).

A campaign (``tokenlaw campaign``) searches the cells itself.  A user who holds a HypoFuzz licence can
point HypoFuzz at the same cells instead: ``examples/hypofuzz/test_tokenlaw_cells.py`` is a pytest
module of one parametrised ``@given`` test, one parameter per cell of a claimed row (an expected
violation is no test: finding it is what the suite wants, not a failure).  Each example is judged by
the cell's contract, exactly as :func:`tokenlaw.fuzz.engine.run_cell` judges it; the regimes it
visits are reported with ``hypothesis.event`` (a fuzzer's coverage counts them) and the discrepancy /
bound with ``hypothesis.target``.  tokenlaw never imports HypoFuzz.

>>> from tokenlaw.properties.catalogue import default_registry
>>> cells = claimed_cells(default_registry(), operators=["presence"], dtypes=["float64"])
>>> [c.id for c in cells][:2]
['presence-zero_absorption-eager-float64', 'presence-null_gradient-eager-float64']
"""
from __future__ import annotations

from hypothesis import event, target

from tokenlaw.operators.dtypes import DTYPES
from tokenlaw.properties import backends
from tokenlaw.properties.plan import contracts_of, plan

from .regimes import applicable, visited
from .strategies import cases


def claimed_cells(registry, *, operators=None, contracts=None, dtypes=None, backend=backends.EAGER.name) -> list:
    """The cells of the claimed rows of ``registry`` that are judged here (not set aside by their contract)."""
    impl, laws = backends.get(backend), contracts_of(registry)
    out = []
    for row in plan(registry, operators=operators, contracts=contracts, dtypes=dtypes, backend=backend):
        if row.declared != "claims":
            continue
        law, op = laws[row.contract], registry[row.operator]
        out += [c for c in row.cells
                if not (law.skip and law.skip(op, c.dtype, impl)) and not impl.not_runnable(c.dtype)]
    return out


def strategy(registry, cell):
    """The cases ``run_cell`` draws for ``cell``."""
    law = contracts_of(registry)[cell.contract]
    return cases(registry[cell.operator], DTYPES[cell.dtype], backend=cell.backend, **law.fuzz_bounds)


def check_example(registry, cell, case) -> None:
    """Judge one drawn ``case`` of ``cell``: AssertionError (with the law's detail and the case) on a violation."""
    law, op = contracts_of(registry)[cell.contract], registry[cell.operator]
    for name in visited(case, applicable(op, law.regimes, DTYPES[cell.dtype])):
        event("regime", name)
    v = law.judge(case)
    if not law.exact and v.ratio < float("inf"):
        target(min(v.ratio, 1e6), label="discrepancy / bound")
    assert not v.violated, f"{cell.id}: {v.detail}\n{case.describe()}"
